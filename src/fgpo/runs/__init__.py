"""Training runs as the train stage keeps them: each (method, seed) run of a setting trained,
evaluated on the test split, saved, logged to MLflow and cached under runs/, resumable after a
kill. Above `train` and `evaluate` in the data flow; the stage only reads params and writes the
per-method outputs."""
