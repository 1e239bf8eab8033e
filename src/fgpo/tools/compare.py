"""`seq_compare`: how a question's sequences relate (identity, reverse complement, alignment)."""

from __future__ import annotations

from typing import Any

from Bio.Align import PairwiseAligner
from Bio.Seq import complement, reverse_complement

from fgpo.tools.base import Tool, ToolOutput, register

MAX_LISTED = 10
"""Differences spelled out in the prompt text (data lists them all)."""

ALIGNER = PairwiseAligner(mode="global", match_score=1.0, mismatch_score=-1.0,
                          open_gap_score=-2.0, extend_gap_score=-0.5)


# ---- helpers -------------------------------------------------------------------------------

def alignment_differences(gapped_a: str, gapped_b: str) -> list[dict[str, Any]]:
    """Mismatches and indels of a gapped pair, at 0-based positions of the first sequence.

    Consecutive gap columns merge into one indel (ref 'ACG' > alt '-', or '-' > 'TT' inserted
    before `pos`); mismatches are listed base by base.
    """
    diffs: list[dict[str, Any]] = []
    pos, prev_kind = 0, None
    for x, y in zip(gapped_a, gapped_b):
        kind = None if x == y else "ins" if x == "-" else "del" if y == "-" else "snv"
        if kind in ("ins", "del") and kind == prev_kind:
            diffs[-1]["ref" if kind == "del" else "alt"] += x if kind == "del" else y
        elif kind:
            diffs.append({"pos": pos, "ref": x, "alt": y})
        pos += x != "-"
        prev_kind = kind
    return diffs


def compare_pair(a: str, b: str) -> dict[str, Any]:
    """Relations of `b` to `a`, global alignment identity and the differences."""
    matches, gapped = 0, None
    if a and b:
        aln = ALIGNER.align(a, b)[0]  # first optimal alignment: deterministic
        gapped = (aln[0], aln[1])
        matches = sum(x == y != "-" for x, y in zip(*gapped))
    longest = max(len(a), len(b))
    if len(a) == len(b):
        diffs = [{"pos": i, "ref": x, "alt": y} for i, (x, y) in enumerate(zip(a, b)) if x != y]
    elif gapped:
        diffs = alignment_differences(*gapped)
    else:  # one sequence empty: the other is one insertion or deletion
        diffs = [{"pos": 0, "ref": a or "-", "alt": b or "-"}]
    return {
        "identical": a == b,
        "reverse_complement": b == reverse_complement(a),
        "reverse": b == a[::-1],
        "complement": b == complement(a),
        "identity": round(matches / longest, 4) if longest else 1.0,
        "n_differences": len(diffs),
        "differences": diffs,
    }


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


# ---- tool ----------------------------------------------------------------------------------

@register
class SeqCompare(Tool):
    name = "seq_compare"
    version = "1"
    description = ("compares a question's two sequences (identity, reverse complement, global "
                   "alignment, differences); a single sequence is checked for being a palindrome")

    def analyse(self, seq: str) -> dict[str, Any]:
        return {"n_sequences": 1, "length": len(seq), "palindrome": seq == reverse_complement(seq)}

    def run(self, seqs: dict[str, str]) -> ToolOutput:
        """One sequence: palindrome check. Two or more: the first two are compared."""
        labels = list(seqs)
        if len(labels) == 1:
            data = self.analyse(seqs[labels[0]])
        else:
            a, b = seqs[labels[0]], seqs[labels[1]]
            data = {"n_sequences": len(labels), "labels": labels[:2],
                    "lengths": [len(a), len(b)], **compare_pair(a, b)}
        return ToolOutput(text=self.bound(f"[{self.name}] {self.describe(data)}"), data=data)

    def describe(self, data: dict[str, Any]) -> str:
        if data["n_sequences"] == 1:
            return (f"single sequence ({data['length']} bp); its own reverse complement "
                    f"(palindrome): {yes(data['palindrome'])}")
        la, lb = data["labels"]
        listed = ", ".join(f"{d['pos']} {d['ref']}>{d['alt']}"
                           for d in data["differences"][:MAX_LISTED])
        more = ", …" if data["n_differences"] > MAX_LISTED else ""
        extra = data["n_sequences"] - 2
        return (f"{la} vs {lb}: {data['lengths'][0]} vs {data['lengths'][1]} bp; identical: "
                f"{yes(data['identical'])}; {lb} = revcomp({la}): "
                f"{yes(data['reverse_complement'])}; reverse: {yes(data['reverse'])}; "
                f"complement: {yes(data['complement'])}; global identity "
                f"{100 * data['identity']:.1f}%; {data['n_differences']} difference(s)"
                + (f": {listed}{more}" if listed else "")
                + (f" ({extra} more sequence(s) not compared)" if extra else ""))
