"""The DVC entry points, one module per stage: each `main()` reads params and files, calls the
library below it and writes the stage's outputs. Nothing below imports from here."""
