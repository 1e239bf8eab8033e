"""The paper's headline numbers, as it reports them, for the report's "Paper vs this run" table.

Source: the FGPO paper's main results (the MISSION's summary of it): FGPO beats GRPO in all 15
reasoner x benchmark settings, by 6.75 points on average and 14.20 at most; GRPO's on-demand
schedule costs 2.4x the reward evaluations of FGPO's table; on GenomeQA the tools per question
fall from 2.36 (GRPO) to 1.40 (FGPO); GRPO's zero-signal fraction rises from 0.2% under the
uniform policy to 20.8% after training.
"""

PAPER = {"wins": "15 of 15", "mean_diff": "+6.75", "max_diff": "+14.20", "budget": "2.4x",
         "tools": "2.36 -> 1.40", "zero_signal": "0.2% -> 20.8%"}
