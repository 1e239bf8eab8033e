"""Core tools checked against independent truths: hand arithmetic, brute force, Biopython.

Each expected number below is computed by hand (see the comments) or by a method other than
the one the tool uses, so a wrong tool output fails the test.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from Bio.SeqUtils import MeltingTemp

from fgpo.benchmarks.signals import coding_sequence
from fgpo.errors import InputError
from fgpo.question import Question
from fgpo.seqio import atomic_write_parquet
from fgpo.tools.toolset import ToolsConfig, build_tools, tool_fingerprint
from dataclasses import asdict as config_dict
from fgpo.tools.composition import Composition
from fgpo.tools.motifs import MotifScan, load_motif, load_pssm, pssm_threshold
from fgpo.tools.orfs import OrfFinder
from fgpo.tools.organism import ORGANISMS, OrganismSignature
from fgpo.tools.outputs import load_tool_outputs, run_tools
from fgpo.tools.restriction import RestrictionSites
from fgpo.tools.splice import SpliceSites

CFG = ToolsConfig()
RELEASE = "JASPAR2024"
CTCF, TBP = "MA0139.2", "MA0108.3"
COMP = {"A": "T", "C": "G", "G": "C", "T": "A"}


def rc(seq: str) -> str:
    """Reverse complement by table lookup (independent of Bio.Seq)."""
    return "".join(COMP[b] for b in reversed(seq))


def one(tool_cls, seq: str, cfg: ToolsConfig = CFG) -> dict:
    return tool_cls(cfg).run({"seq": seq}).data["seq"]


# ---- composition ----------------------------------------------------------------------------

@pytest.mark.parametrize("seq, gc, skew, cpg_oe, cpg_count", [
    # ACGTCGAA: A=3 C=2 G=2 T=1, L=8. GC = 4/8 = 0.5; skew (2-2)/4 = 0;
    # CG at 1 and 4 -> 2; o/e = 2 * 8 / (2 * 2) = 4.0
    ("ACGTCGAA", 0.5, 0.0, 4.0, 2),
    # GGGACGTTTC: G=4 (0,1,2,5) C=2 (4,9) A=1 T=3, L=10. GC = 6/10; skew (4-2)/6 = 1/3;
    # CG at 4 -> 1; o/e = 1 * 10 / (2 * 4) = 1.25
    ("GGGACGTTTC", 0.6, 1 / 3, 1.25, 1),
    # CCCCG: C=4 G=1, L=5. GC = 1; skew (1-4)/5 = -0.6; CG at 3 -> 1; o/e = 1*5/(4*1) = 1.25
    ("CCCCG", 1.0, -0.6, 1.25, 1),
    # GGCC: no CG dinucleotide (GC is not CpG) -> o/e 0; GC 1; skew 0
    ("GGCC", 1.0, 0.0, 0.0, 0),
    # ATAT: no C or G at all -> every ratio defined as 0
    ("ATAT", 0.0, 0.0, 0.0, 0),
])
def test_composition_hand_values(seq, gc, skew, cpg_oe, cpg_count) -> None:
    d = one(Composition, seq)
    assert d["length"] == len(seq)
    assert d["gc_fraction"] == pytest.approx(gc)
    assert d["gc_skew"] == pytest.approx(skew)
    assert d["cpg_oe"] == pytest.approx(cpg_oe)
    assert d["cpg_count"] == cpg_count
    assert d["n_ambiguous"] == 0


def test_composition_ignores_ambiguous_bases_for_gc() -> None:
    # GCNNNNAT: over A/C/G/T only G, C, A, T -> GC = 2/4 = 0.5 (2/8 = 0.25 if N counted)
    d = one(Composition, "GCNNNNAT")
    assert d["n_ambiguous"] == 4 and d["length"] == 8
    assert d["gc_fraction"] == pytest.approx(0.5)
    # R Y K M are two-base ambiguity codes, neither G/C nor A/T: GGRYKMAT -> 2/4 = 0.5
    assert one(Composition, "GGRYKMAT")["gc_fraction"] == pytest.approx(0.5)


def test_composition_counts_ambiguous_letters() -> None:
    d = one(Composition, "GCNNNNAT")
    assert d["n_ambiguous"] == 4 and d["length"] == 8
    assert d["cpg_count"] == 0  # "GC" is not a CpG
    assert one(Composition, "ACGNCG")["cpg_count"] == 2


@pytest.mark.parametrize("oligo", ["AGCTAGCTAGGCTTACGA", "GCGCGCGCATATATAT", "ACGTTGCAAGGCTT"])
def test_tm_nn_equals_biopython(oligo: str) -> None:
    d = one(Composition, oligo)
    assert d["tm_nn"] == pytest.approx(round(MeltingTemp.Tm_NN(oligo), 2), abs=1e-9)


# ---- motif_scan -------------------------------------------------------------------------------

def log_odds_by_hand(matrix_id: str, pseudocount: float = 0.5) -> np.ndarray:
    """[width, 4] log2(((count + pc) / (N + 4 pc)) / 0.25) from the raw JASPAR counts."""
    counts = load_motif(RELEASE, matrix_id).counts
    width = len(counts["A"])
    m = np.array([[counts[b][i] for b in "ACGT"] for i in range(width)], dtype=float)
    p = (m + pseudocount) / (m.sum(axis=1, keepdims=True) + 4 * pseudocount)
    return np.log2(p / 0.25)


def motif_hits(seq: str, matrix_id: str) -> dict | None:
    d = one(MotifScan, seq)
    for m in d["motifs"]:
        if m["matrix_id"] == matrix_id:
            return m
    return None


def test_ctcf_consensus_on_plus_strand() -> None:
    consensus = str(load_motif(RELEASE, CTCF).consensus)
    lo = log_odds_by_hand(CTCF)
    assert len(consensus) == lo.shape[0] == 15
    best = float(lo.max(axis=1).sum())  # best possible score: the max of every column
    seq = "A" * 37 + consensus + "A" * 48  # planted at 37 (0-based), + strand
    m = motif_hits(seq, CTCF)
    assert m is not None and m["tf"] == "CTCF"
    top = m["hits"][0]
    assert (top["start"], top["end"], top["strand"]) == (37, 52, "+")
    assert top["score"] == pytest.approx(best, abs=1e-3)
    assert m["max_score"] == pytest.approx(best, abs=1e-3)


def test_ctcf_reverse_complement_reports_minus_strand() -> None:
    consensus = str(load_motif(RELEASE, CTCF).consensus)
    best = float(log_odds_by_hand(CTCF).max(axis=1).sum())
    seq = "A" * 52 + rc(consensus) + "A" * 21  # planted at 52 as its reverse complement
    m = motif_hits(seq, CTCF)
    assert m is not None
    top = m["hits"][0]
    assert (top["start"], top["end"], top["strand"]) == (52, 67, "-")
    assert top["score"] == pytest.approx(best, abs=1e-3)


def test_background_without_site_reports_no_ctcf() -> None:
    d = one(MotifScan, "A" * 100)
    assert d["motifs"] == []
    assert "CTCF" in d["absent"]
    d = one(MotifScan, "ACAGT" * 20)  # low-complexity, no CTCF-like G/C run
    assert CTCF not in {m["matrix_id"] for m in d["motifs"]}
    assert "CTCF" in d["absent"]


def test_motif_windows_with_ambiguous_bases_skipped() -> None:
    consensus = str(load_motif(RELEASE, CTCF).consensus)
    # N/R/Y outside the site: the hit is still found at 30
    m = motif_hits("N" * 10 + "A" * 20 + consensus + "A" * 5 + "NNRY" + "A" * 20, CTCF)
    assert m is not None and [(h["start"], h["strand"]) for h in m["hits"]] == [(30, "+")]
    # an N inside the only site: that window is skipped, not scored or reported as NaN
    broken = consensus[:7] + "N" + consensus[8:]
    assert motif_hits("A" * 20 + broken + "A" * 20, CTCF) is None


def test_tbp_threshold_matches_brute_force_fpr() -> None:
    """Enumerate all 4^7 TBP words under a uniform background and count those above threshold.

    Biopython's ScoreDistribution rounds every column score to a grid of step
    `interval / (precision * w - 1)` and returns the grid point where the binned right tail first
    reaches the FPR. Each word's binned score is within (w + 1) * step / 2 of its exact score
    (w column roundings plus the offset of the starting bin), so with delta = (w + 2) * step:
    exact tail(thr - delta) >= fpr and exact tail(thr + delta + step) < fpr. On top of that the
    exact tail at the threshold is a multiple of 4^-w (= 0.61 * fpr for w = 7), so it can be at
    most one word's mass away from the FPR: |tail(thr) - fpr| <= 4^-w (i.e. <= 1.61 * fpr).
    """
    fpr = CFG.motif_fpr
    thr = pssm_threshold(RELEASE, TBP, fpr, CFG.motif_pseudocount)
    lo = log_odds_by_hand(TBP, CFG.motif_pseudocount)
    w = lo.shape[0]
    assert w == 7
    words = np.array(list(itertools.product(range(4), repeat=w)))
    scores = lo[np.arange(w), words].sum(axis=1)  # exact score of every one of the 16384 words
    n = 4 ** w

    pssm = load_pssm(RELEASE, TBP, CFG.motif_pseudocount)  # the hand matrix is the tool's matrix
    assert float(pssm.max) == pytest.approx(scores.max(), abs=1e-9)
    assert float(pssm.calculate("TATAAAA")) == pytest.approx(lo[np.arange(w), [3, 0, 3, 0, 0, 0, 0]].sum())

    interval = max(0.0, scores.max()) - min(0.0, scores.min())
    step = interval / (1000 * w - 1)
    delta = (w + 2) * step

    def tail(t: float) -> float:
        return float((scores >= t).sum()) / n

    assert tail(thr - delta) >= fpr
    assert tail(thr + delta + step) < fpr
    assert abs(tail(thr) - fpr) <= 1 / n
    assert tail(thr) <= fpr * 1.62


# ---- orf_finder ---------------------------------------------------------------------------------

# Hand-written codons and their amino acids (standard code), 24 codons after the ATG.
ORF_CODONS = [("GCT", "A"), ("GAA", "E"), ("TGG", "W"), ("AAA", "K"), ("CTG", "L"),
              ("TCT", "S"), ("ACC", "T"), ("CGT", "R"), ("GGC", "G"), ("CAT", "H"),
              ("ATT", "I"), ("TTC", "F"), ("CCA", "P"), ("CAG", "Q"), ("GAT", "D"),
              ("AAC", "N"), ("TGC", "C"), ("TAC", "Y"), ("GTT", "V"), ("ATG", "M"),
              ("GCA", "A"), ("AGA", "R"), ("TCG", "S"), ("GGA", "G")]
ORF = "ATG" + "".join(c for c, _ in ORF_CODONS) + "TAA"  # 3 + 72 + 3 = 78 nt
PEPTIDE = "M" + "".join(a for _, a in ORF_CODONS)  # 25 aa, stop not translated
# Stop-rich background: TAA repeats contain no ATG on either strand (+: TAA/AAT/ATA frames;
# -: TTA/TAT/ATT frames), so any reported ORF must come from the planted one.
BG = "TAA" * 40


def test_orf_plus_strand_hand_built() -> None:
    assert PEPTIDE == "MAEWKLSTRGHIFPQDNCYVMARSG" and len(ORF) == 78
    pos = 31
    seq = BG[:pos] + ORF + BG[pos:]
    d = one(OrfFinder, seq)
    planted = [o for o in d["orfs"] if o["strand"] == "+" and o["start"] == pos]
    assert len(planted) == 1
    o = planted[0]
    assert (o["start"], o["end"], o["strand"]) == (31, 31 + 78, "+")
    assert o["length_nt"] == 78 and o["n_aa"] == 25
    assert o["frame"] == 31 % 3
    assert o["protein"] == PEPTIDE
    assert d["longest"] == o


def test_orf_minus_strand_coordinates_on_plus_strand() -> None:
    pos = 44
    seq = BG[:pos] + rc(ORF) + BG[pos:]
    d = one(OrfFinder, seq)
    minus = [o for o in d["orfs"] if o["strand"] == "-"]
    assert len(minus) == 1
    o = minus[0]
    # the planted ORF occupies [44, 122) on the + strand whatever strand it reads on
    assert (o["start"], o["end"], o["strand"]) == (44, 122, "-")
    assert o["protein"] == PEPTIDE
    assert seq[o["start"]:o["end"]] == rc(ORF)
    # frame counted from the - strand's 5' end: the ORF starts at len - end on the rc
    assert o["frame"] == (len(seq) - 122) % 3


def test_orf_min_aa_filter() -> None:
    short = "ATG" + "GCTGAATGGAAACTG" + "TGA"  # ATG + 5 codons + stop: n_aa = 6 (M A E W K L)
    seq = BG[:30] + short + BG[30:]
    assert one(OrfFinder, seq)["n_orfs"] == 0  # default min_aa = 20
    d = one(OrfFinder, seq, ToolsConfig(orf_min_aa=6))
    assert d["n_orfs"] == 1 and d["orfs"][0]["protein"] == "MAEWKL"
    assert d["orfs"][0]["n_aa"] == 6
    assert one(OrfFinder, seq, ToolsConfig(orf_min_aa=7))["n_orfs"] == 0


def test_orf_without_stop_not_reported() -> None:
    seq = BG[:30] + ORF[:-3] + "AAAAAAAAA"  # ORF runs off the end: no stop codon
    orfs = one(OrfFinder, seq, ToolsConfig(orf_min_aa=5))["orfs"]
    # (an out-of-frame ATG inside the planted codons may still start a short ORF elsewhere)
    assert not [o for o in orfs if o["strand"] == "+" and o["start"] == 30]
    assert one(OrfFinder, BG[:30] + ORF + BG[30:], ToolsConfig(orf_min_aa=5))["orfs"][0][
        "start"] == 30


# ---- restriction_sites ----------------------------------------------------------------------------

# enzyme, site, bases of the site 5' of the top-strand cut (from the enzymes' published cuts)
ENZYMES = [("EcoRI", "GAATTC", 1), ("BamHI", "GGATCC", 1), ("HindIII", "AAGCTT", 1),
           ("NotI", "GCGGCCGC", 2), ("XhoI", "CTCGAG", 1), ("PstI", "CTGCAG", 5),
           ("SmaI", "CCCGGG", 3), ("KpnI", "GGTACC", 5), ("NcoI", "CCATGG", 1),
           ("SalI", "GTCGAC", 1)]


@pytest.mark.parametrize("enzyme, site, cut", ENZYMES)
def test_restriction_site_planted(enzyme: str, site: str, cut: int) -> None:
    pos = 23
    seq = "A" * pos + site + "A" * 30
    d = one(RestrictionSites, seq)
    assert set(d["sites"]) == {enzyme}
    s = d["sites"][enzyme]
    assert s["site"] == site
    assert s["site_starts"] == [pos]
    # 1-based position of the first base after the top-strand cut = pos + cut + 1
    assert s["cut_positions"] == [pos + cut + 1]
    assert enzyme not in d["absent"] and len(d["absent"]) == len(ENZYMES) - 1


def test_ecori_two_sites_and_none() -> None:
    seq = "T" * 10 + "GAATTC" + "T" * 20 + "GAATTC" + "T" * 10
    s = one(RestrictionSites, seq)["sites"]["EcoRI"]
    assert s["site_starts"] == [10, 36] and s["cut_positions"] == [12, 38]
    d = one(RestrictionSites, "ACAT" * 30)
    assert d["sites"] == {} and d["absent"] == CFG.enzymes
    d = one(RestrictionSites, "A" * 20 + "GAATTA" + "A" * 20)  # near miss of GAATTC
    assert "EcoRI" not in d["sites"] and "EcoRI" in d["absent"]


# ---- splice_sites ---------------------------------------------------------------------------------

def splice_log_odds(freq: list[tuple[int, int, int, int]], site: str) -> float:
    """Score by hand: log2(((f + 0.25) / 101) / 0.25), each row's percentages summing to 100."""
    return sum(math.log2((row["ACGT".index(b)] + 0.25) / 101 / 0.25)
               for row, b in zip(freq, site))


def test_donor_consensus_boundary() -> None:
    from fgpo.tools.splice import DONOR_FREQ
    donor = "CAGGTAAGT"  # exon CAG | intron GTAAGT
    pos = 30
    seq = "A" * pos + donor + "A" * 30
    d = one(SpliceSites, seq)
    sites = d["donor"]["sites"]
    assert sites and sites[0]["start"] == pos
    assert sites[0]["boundary"] == pos + 3 == seq.index("GT")  # junction just before GT
    assert sites[0]["score"] == pytest.approx(splice_log_odds(DONOR_FREQ, donor), abs=1e-3)
    assert d["acceptor"]["n_sites"] == 0


def test_acceptor_consensus_boundary() -> None:
    from fgpo.tools.splice import ACCEPTOR_FREQ
    acceptor = "T" * 11 + "CAGG"  # pyrimidine tract (11) + C A G | G: matrix width 15
    assert len(acceptor) == len(ACCEPTOR_FREQ) == 15
    pos = 25
    seq = "A" * pos + acceptor + "A" * 30
    d = one(SpliceSites, seq)
    sites = d["acceptor"]["sites"]
    assert sites and sites[0]["start"] == pos
    assert sites[0]["boundary"] == seq.index("AG") + 2 == pos + 14  # right after the AG
    assert sites[0]["score"] == pytest.approx(splice_log_odds(ACCEPTOR_FREQ, acceptor), abs=1e-3)
    assert d["donor"]["n_sites"] == 0


def test_no_splice_sites_without_gt_or_ag() -> None:
    d = one(SpliceSites, "ACT" * 40)  # no G at all: no GT and no AG
    assert d["donor"]["n_sites"] == 0 and d["acceptor"]["n_sites"] == 0


# ---- organism_signature ---------------------------------------------------------------------------

@pytest.mark.parametrize("organism", list(ORGANISMS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_organism_nearest_and_gc(organism: str, seed: int) -> None:
    seq = coding_sequence(np.random.default_rng(seed), 300, organism)
    d = one(OrganismSignature, seq)
    assert d["nearest"] == organism
    counts = Counter(seq)
    assert d["gc"] == pytest.approx(round((counts["G"] + counts["C"]) / len(seq), 4), abs=1e-9)
    # the whole gene is the longest ORF, read in frame 0: codons 2, 5, 8, ... are third positions
    third = seq[2::3]
    assert d["gc3"] == pytest.approx(round(sum(b in "GC" for b in third) / len(third), 4))
    assert d["n_codons"] == len(seq) // 3 == 302


# ---- output contract, config, fingerprint, determinism --------------------------------------------

def long_busy_sequence() -> str:
    """Random DNA studded with every enzyme site, every panel motif's consensus and splice sites."""
    rng = np.random.default_rng(7)
    plants = [site for _, site, _ in ENZYMES] + [
        str(load_motif(RELEASE, mid).consensus) for mid in CFG.motif_ids] + [
        "CAGGTAAGT", "TTTTTTTTTTTCAGG", ORF]
    parts = []
    for i in range(3 * len(plants)):
        parts.append("".join(rng.choice(list("ACGT"), size=40)))
        parts.append(plants[i % len(plants)])
    return "".join(parts)


@pytest.mark.parametrize("limit", [480, 120])
def test_text_bounded(limit: int) -> None:
    seq = long_busy_sequence()
    cfg = ToolsConfig(max_text_chars=limit)
    long_seen = False
    for tool in build_tools(cfg):
        out = tool.run({"seq": seq})
        assert len(out.text) <= limit, tool.name
        assert out.text.startswith(f"[{tool.name}]")
        json.dumps(out.data)
        long_seen |= out.text.endswith("…")
    assert long_seen  # at least one tool had more to say than the limit allowed
    # two sequences (ref/alt) are also bounded as one text
    out = build_tools(cfg)[0].run({"ref": seq, "alt": seq[::-1]})
    assert len(out.text) <= limit


def test_build_tools_unknown_name() -> None:
    with pytest.raises(InputError) as exc:
        build_tools(ToolsConfig(names=["composition", "nope"]))
    assert "tools.names" in str(exc.value) and "nope" in str(exc.value)


def test_fingerprint_changes_only_with_output_relevant_settings() -> None:
    names = list(CFG.names)
    base = tool_fingerprint(ToolsConfig(names=names))
    assert tool_fingerprint(ToolsConfig(names=list(names))) == base  # stable
    assert tool_fingerprint(ToolsConfig(names=names, workers=1, chunk_size=3)) == base
    assert tool_fingerprint(ToolsConfig(names=names[::-1])) != base  # bit order
    assert tool_fingerprint(ToolsConfig(names=names[:-1])) != base  # K
    assert tool_fingerprint(ToolsConfig(names=names, motif_fpr=1e-3)) != base
    assert tool_fingerprint(ToolsConfig(names=names, orf_min_aa=30)) != base
    assert tool_fingerprint(ToolsConfig(names=names, enzymes=["EcoRI"])) != base
    assert tool_fingerprint(ToolsConfig(names=names, max_text_chars=200)) != base


def test_fingerprint_mismatch_names_the_differing_setting() -> None:
    """Issue 10, item 11: a changed max_text_chars printed two identical tool lists."""
    from fgpo.tools.toolset import fingerprint_spec, require_fingerprint

    built, now = ToolsConfig(), ToolsConfig(max_text_chars=300, orf_min_aa=30)
    fp = tool_fingerprint(built)
    metas = {"spec": {"fingerprint": fp, "tools": built.names,  # as reward tables record it
                      "fingerprint_spec": fingerprint_spec(built)},
             "config": {"fingerprint": fp, "tools": built.names,  # as tool outputs record it
                        "config": config_dict(built)}}
    for kind, meta in metas.items():
        require_fingerprint(meta, built, "f.parquet", "the tools stage")  # same tools: fine
        with pytest.raises(InputError) as exc:
            require_fingerprint(meta, now, "f.parquet", "the tools stage")
        msg = str(exc.value)
        assert "max_text_chars: 480 -> 300" in msg and "orf_finder.min_aa: 20 -> 30" in msg, kind
        assert "motif_scan" not in msg and "f.parquet" in msg, kind  # only what differs
    # a file recording only the hash: the settings differ, but cannot be listed
    with pytest.raises(InputError, match="cannot be listed"):
        require_fingerprint({"fingerprint": fp, "tools": built.names}, now, "f.parquet", "x")


def test_tools_config_docstring_names_a_working_command() -> None:
    """It named `fgpo tools --list`, which does not exist (the command is `list-tools`)."""
    import inspect
    import re
    import shlex

    from typer.testing import CliRunner

    from fgpo.cli import app

    named = re.findall(r"`fgpo ([^`]+)`", inspect.getsource(ToolsConfig))
    assert named
    for args in named:
        result = CliRunner().invoke(app, shlex.split(args))
        assert result.exit_code == 0, (args, result.output)
        assert "composition" in result.output


def test_tools_deterministic() -> None:
    seq = long_busy_sequence()[:1500]
    first = [t.run({"seq": seq}) for t in build_tools(CFG)]
    again = [t.run({"seq": seq}) for t in build_tools(CFG)]
    assert first == again
    tools = build_tools(CFG)
    assert [t.run({"seq": seq}) for t in tools] == [t.run({"seq": seq}) for t in tools]


# ---- the tools stage: parallel == serial, fingerprint check on load -------------------------------

def stage_questions(n: int = 20) -> list[Question]:
    rng = np.random.default_rng(3)
    qs = []
    for i in range(n):
        if i % 4 == 3:
            seqs = {"ref": "".join(rng.choice(list("ACGT"), 150)),
                    "alt": "".join(rng.choice(list("ACGT"), 150))}
        elif i % 4 == 2:
            seqs = {"seq": coding_sequence(rng, 60, list(ORGANISMS)[i % 4])}
        else:
            seqs = {"seq": "".join(rng.choice(list("ACGT"), 200 + 10 * i))}
        qs.append(Question(id=f"q{i:03d}", benchmark="t", family="f", question="?",
                           sequences=seqs, options=["yes", "no"], answer=0))
    return qs


def test_run_tools_parallel_equals_serial(tmp_path) -> None:
    qs = stage_questions()
    serial_cfg = ToolsConfig(workers=1, chunk_size=3)
    par_cfg = ToolsConfig(workers=2, chunk_size=3)  # 7 chunks over 2 processes
    serial = run_tools(qs, serial_cfg, progress=False)
    par = run_tools(qs, par_cfg, progress=False)
    assert len(serial) == len(qs) * len(CFG.names)
    assert list(serial.question_id.unique()) == [q.id for q in qs]  # question order kept
    pd.testing.assert_frame_equal(serial, par)

    # written as the stage writes it, the outputs load back with the same config ...
    meta = {"fingerprint": tool_fingerprint(serial_cfg), "tools": serial_cfg.names,
            "config": config_dict(serial_cfg)}
    path = atomic_write_parquet(par, tmp_path / "t.parquet", metadata=meta)
    loaded = load_tool_outputs(path, par_cfg)  # workers/chunk_size do not change outputs
    assert set(loaded) == {q.id for q in qs}
    first = serial.iloc[0]
    assert loaded[first.question_id][first.tool].text == first.text
    assert loaded[first.question_id][first.tool].data == json.loads(first.data)

    # ... and are refused by another tool set
    for other in (ToolsConfig(names=CFG.names[::-1]), ToolsConfig(motif_fpr=1e-3),
                  ToolsConfig(names=["composition"])):
        with pytest.raises(InputError) as exc:
            load_tool_outputs(path, other)
        assert "fingerprint" in str(exc.value) and str(path) in str(exc.value)


def test_sequence_exactly_one_matrix_wide_is_scanned() -> None:
    """Biopython's search fails on a sequence as wide as the matrix; the tools score it."""
    from Bio.Seq import Seq

    from fgpo.tools.motifs import load_pssm
    from fgpo.tools.splice import best_sites

    pssm = load_pssm("JASPAR2024", "MA0139.2", 0.5)
    consensus = str(pssm.consensus)
    d = one(MotifScan, consensus)
    ctcf = [m for m in d["motifs"] if m["matrix_id"] == "MA0139.2"][0]
    assert (ctcf["hits"][0]["start"], ctcf["hits"][0]["strand"]) == (0, "+")
    d = one(MotifScan, str(Seq(consensus).reverse_complement()))
    ctcf = [m for m in d["motifs"] if m["matrix_id"] == "MA0139.2"][0]
    assert (ctcf["hits"][0]["start"], ctcf["hits"][0]["strand"]) == (0, "-")
    hits, _, _ = best_sites("acceptor", "TTTTTTTTTTTCAGG", 1e-3)
    assert [h["boundary"] for h in hits] == [14]
