"""GRPO with DAPO's dynamic sampling (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement
Learning System at Scale", section 3.2): a group whose G rewards are all equal carries no
signal, so it is drawn again, up to `max_resamples` times, before the step.

    while any group has r_1 = ... = r_G and redraws < max_resamples:
        S_1..S_G ~ pi_old again for those questions            (each draw paid: G evaluations)
    A_i, loss: GRPO's (group-normalised, clipped, beta k3)

DAPO fills its batch with other prompts instead; redrawing the same question keeps the
protocol's question visits identical for every method. A question whose every subset gets one
reward (all correct, or all wrong) stays constant: the cap bounds what it costs. Every extra
draw counts as on-demand reasoner evaluations (`budget/reward_evals`), the price of the signal.
DAPO's other parts (clip-higher, token-level loss, overlong shaping) are not this estimator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from fgpo.config import check_number
from fgpo.train.base import register
from fgpo.train.grpo import GRPO, GRPOConfig, sample_groups

if TYPE_CHECKING:
    from fgpo.train.settings import TrainSettings


@dataclass
class DAPODSConfig(GRPOConfig):
    """`train.dapo_ds:` section of params.yaml (GRPO's fields, plus the redraw cap)."""

    max_resamples: int = 4
    """Redraws of a constant group before it is kept as is (0 = plain GRPO); each costs G
    reward evaluations (DAPO's cap on generation rounds, `max_num_gen_batches` in verl)."""
    section: ClassVar[str] = "dapo_ds"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(self.max_resamples, "train.dapo_ds.max_resamples", "set how often a "
                     "constant group may be drawn again, e.g. 4", ge=0, integer=True)


def constant_groups(rewards: torch.Tensor) -> torch.Tensor:
    """Rows of [B, G] whose G rewards are all equal (no learning signal), as indices."""
    return (rewards.amax(-1) == rewards.amin(-1)).nonzero().flatten()


@register
class DAPODS(GRPO):
    """GRPO whose constant groups are drawn again (up to a cap), each draw paid for."""

    name = "dapo_ds"
    Config = DAPODSConfig
    tuned_from = "grpo"

    def __init__(self, cfg: TrainSettings, own: DAPODSConfig, rewards: torch.Tensor,
                 n_train: int, generator: torch.Generator) -> None:
        super().__init__(cfg, own, rewards, n_train, generator)
        self.redrawn = 0  # groups drawn again, over the run

    def draw(self, idx: torch.Tensor, logp: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        masks, tempered = super().draw(idx, logp)
        for _ in range(self.own.max_resamples):
            stuck = constant_groups(self.rewards[idx].gather(1, masks))
            if not len(stuck):
                break
            again, _ = sample_groups(logp[stuck], self.own.group_size, self.own.temperature,
                                     self.generator)
            self.pay(idx[stuck], again)
            masks[stuck] = again
            self.redrawn += len(stuck)
        return masks, tempered

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "redrawn": self.redrawn}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.redrawn = state["redrawn"]
