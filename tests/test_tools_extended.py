"""Extended tools (kmer, compare, CpG, promoter) checked against hand-computed truths."""

from __future__ import annotations

import json
import math
import random

import pytest

from fgpo.tools.toolset import TOOL_REGISTRY, ToolsConfig
from fgpo.tools.compare import SeqCompare
from fgpo.tools.cpg import CpGIslands
from fgpo.tools.kmer import KmerProfile
from fgpo.tools.promoter import PromoterElements

CFG = ToolsConfig()


def random_seq(n: int, alphabet: str = "ACGT", seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def kmer(seq: str) -> dict:
    return KmerProfile(CFG).run({"seq": seq}).data["seq"]


def cpg(seq: str) -> dict:
    return CpGIslands(CFG).run({"seq": seq}).data["seq"]


def promoter(seq: str) -> dict:
    return PromoterElements(CFG).run({"seq": seq}).data["seq"]


# ---- registration and output contract ------------------------------------------------------

@pytest.mark.parametrize("cls, name", [(KmerProfile, "kmer_profile"), (SeqCompare, "seq_compare"),
                                       (CpGIslands, "cpg_islands"),
                                       (PromoterElements, "promoter_elements")])
def test_registered_json_and_bounded(cls: type, name: str) -> None:
    assert TOOL_REGISTRY[name] is cls
    cfg = ToolsConfig(max_text_chars=60)
    for seqs in ({"seq": random_seq(1000, "ACGTN")}, {"ref": "ACGT" * 30, "alt": "ACGA" * 30}):
        out = cls(cfg).run(seqs)
        assert json.loads(json.dumps(out.data)) == out.data  # plain JSON types only
        assert len(out.text) <= 60 and out.text.startswith(f"[{name}]")
        assert out == cls(cfg).run(seqs)  # deterministic


# ---- kmer_profile --------------------------------------------------------------------------

def test_homopolymer_and_dust_of_poly_a() -> None:
    d = kmer("A" * 10)
    assert d["homopolymer"] == {"base": "A", "length": 10, "start": 0}
    # 8 triplets, all AAA: 8 * 7 / 2 pairs / (8 - 1) = 4.0
    assert d["dust_score"] == pytest.approx(4.0)
    assert d["low_complexity"] is True
    assert d["entropy_2mer"] == 0.0 and d["entropy_3mer"] == 0.0
    assert "A x10 at 0" in KmerProfile(CFG).run({"seq": "A" * 10}).text
    assert kmer("AAACCC")["homopolymer"]["start"] == 0  # ties: earliest run


def test_window_dust_of_long_poly_a() -> None:
    d = kmer("A" * 100)
    assert d["dust_score"] == pytest.approx(98 * 97 / 2 / 97)  # 98 triplets
    assert d["dust_window_max"] == pytest.approx(62 * 61 / 2 / 61)  # 62 per 64-bp window
    # the same all-A window reached by sliding over 200 bp of random background
    assert kmer(random_seq(200, seed=4) + "A" * 64)["dust_window_max"] == pytest.approx(31.0)


def test_entropy_of_acgt_repeat_and_top_trinucleotides() -> None:
    d = kmer("ACGT" * 25)
    # 99 2-mers: AC, CG, GT x25 each and TA x24
    p2 = [25 / 99] * 3 + [24 / 99]
    assert d["entropy_2mer"] == pytest.approx(-sum(p * math.log2(p) for p in p2), abs=1e-4)
    # 98 3-mers: ACG, CGT x25; GTA, TAC x24 (ties broken alphabetically)
    assert d["top_trinucleotides"] == [["ACG", 25], ["CGT", 25], ["GTA", 24]]
    # DUST: 2 * C(25,2) + 2 * C(24,2) pairs over 98 - 1
    assert d["dust_score"] == pytest.approx((2 * 300 + 2 * 276) / 97, abs=1e-4)


def test_entropy_of_de_bruijn_sequence_is_four_bits() -> None:
    seq = "AACAGATCCGCTGGTTA"  # B(4,2) de Bruijn cycle, first base appended: each 2-mer once
    assert len({seq[i:i + 2] for i in range(16)}) == 16
    assert kmer(seq)["entropy_2mer"] == pytest.approx(4.0)


def test_planted_ca_repeat_found_with_start() -> None:
    seq = "GGTTG" + "CA" * 8 + "GTTAG"  # flanks chosen so the period-2 run cannot extend
    assert kmer(seq)["tandem_repeat"] == {"unit": "CA", "copies": 8, "start": 5, "length": 16}
    assert kmer("ACGTTAGCAT")["tandem_repeat"] is None


def test_ambiguity_codes_break_runs_and_kmers() -> None:
    d = kmer("AAAANAAAAA")
    assert d["homopolymer"] == {"base": "A", "length": 5, "start": 5}
    assert d["tandem_repeat"]["start"] == 5
    assert d["top_trinucleotides"] == [["AAA", 5]]  # 2 + 3 triplets avoiding the N
    d = kmer("N" * 12)
    assert d["homopolymer"] is None and d["tandem_repeat"] is None


def test_random_sequence_is_not_low_complexity_but_poly_a_stretch_is() -> None:
    background = random_seq(1000, seed=1)
    assert kmer(background)["low_complexity"] is False
    assert kmer(background[:500] + "A" * 40 + background[500:])["low_complexity"] is True


# ---- seq_compare ---------------------------------------------------------------------------

A = "AAACCCGGGTTTAGC"


def compare(ref: str, alt: str, cfg: ToolsConfig = CFG) -> dict:
    return SeqCompare(cfg).run({"ref": ref, "alt": alt}).data


def test_reverse_complement_detected_and_one_mismatch_control() -> None:
    rc = "GCTAAACCCGGGTTT"  # written by hand
    d = compare(A, rc)
    assert d["reverse_complement"] is True and d["identical"] is False
    assert compare(A, "GCTAAACCCGGGTTA")["reverse_complement"] is False


def test_reverse_and_complement_detected_separately() -> None:
    rev, comp = "CGATTTGGGCCCAAA", "TTTGGGCCCAAATCG"  # written by hand
    d = compare(A, rev)
    assert (d["reverse"], d["complement"], d["reverse_complement"]) == (True, False, False)
    d = compare(A, comp)
    assert (d["reverse"], d["complement"], d["reverse_complement"]) == (False, True, False)
    d = compare(A, A)
    assert d["identical"] is True and d["identity"] == 1.0 and d["differences"] == []


def test_snv_differences_and_identity() -> None:
    d = compare("ACGTACGTAC", "ACGAACGTTC")
    assert d["differences"] == [{"pos": 3, "ref": "T", "alt": "A"},
                                {"pos": 8, "ref": "A", "alt": "T"}]
    assert d["identity"] == pytest.approx(0.8)
    assert "3 T>A, 8 A>T" in SeqCompare(CFG).run({"ref": "ACGTACGTAC", "alt": "ACGAACGTTC"}).text


def test_deletion_from_alignment_for_unequal_lengths() -> None:
    d = compare("AAAAACCCCCGGGGGTTTTT", "AAAAACCCCCTTTTT")
    assert d["differences"] == [{"pos": 10, "ref": "GGGGG", "alt": "-"}]
    assert d["identity"] == pytest.approx(15 / 20)


def test_insertion_then_snv_use_first_sequence_positions() -> None:
    d = compare("AAAAACCCCC" + "TTTTTACGTA", "AAAAACCCCC" + "GGGGG" + "TTTTTACCTA")
    assert d["differences"] == [{"pos": 10, "ref": "-", "alt": "GGGGG"},
                                {"pos": 17, "ref": "G", "alt": "C"}]
    assert d["identity"] == pytest.approx(19 / 25)


def test_text_lists_at_most_ten_differences() -> None:
    out = SeqCompare(ToolsConfig(max_text_chars=2000)).run({"ref": "A" * 30, "alt": "C" * 30})
    assert out.data["n_differences"] == 30
    assert out.text.count("A>C") == 10 and "…" in out.text


def test_single_sequence_palindrome() -> None:
    assert SeqCompare(CFG).run({"seq": "GAATTC"}).data["palindrome"] is True
    assert SeqCompare(CFG).run({"seq": "GAATTA"}).data["palindrome"] is False


# ---- cpg_islands ---------------------------------------------------------------------------

def test_cpg_island_boundaries_near_truth() -> None:
    seq = random_seq(300, "AT", 2) + "CG" * 150 + random_seq(300, "AT", 3)  # truth: [300, 600)
    d = cpg(seq)
    assert d["n_islands"] == 1
    island = d["islands"][0]
    assert abs(island["start"] - 300) <= 3 and abs(island["end"] - 600) <= 3
    # 150 C, 150 G, 150 CpG over 300 bp: GC 1.0, o/e = 150 * 300 / (150 * 150) = 2.0
    assert island["gc"] == pytest.approx(1.0) and island["obs_exp"] == pytest.approx(2.0)
    assert d["fraction_covered"] == pytest.approx(300 / 900, abs=0.01)


def test_no_cpg_island_without_gc_or_without_cpg() -> None:
    assert cpg("A" * 1000)["n_islands"] == 0
    assert cpg("CCAGG" * 200)["n_islands"] == 0  # 80% G+C but no CpG dinucleotide


def test_cpg_thresholds_are_strict_and_cpgs_must_lie_inside_window() -> None:
    # one 200-bp window with G+C exactly 0.5 (o/e 50 * 200 / (50 * 50) = 4): not an island
    assert cpg("CG" * 50 + "A" * 100)["n_islands"] == 0
    # G+C 1.0 and o/e exactly 30 * 200 / (100 * 100) = 0.6: not an island
    assert cpg("CG" * 30 + "G" * 70 + "C" * 70)["n_islands"] == 0
    # window [0, 200): C = G = 60, 10 CpGs, o/e 0.556; its last C pairs with the G at 200, which
    # would make 11 CpGs (0.611) if counted; window [1, 201): 10 * 200 / (59 * 61) = 0.556
    seq = "CG" * 10 + "A" * 80 + "G" * 50 + "C" * 50 + "G"
    assert cpg(seq)["n_islands"] == 0


def brute_force_islands(seq: str, window: int = 200) -> list[tuple[int, int]]:
    """Reference: test every window by string counting, merge, trim to the outer CpGs."""
    w = min(window, len(seq))
    regions: list[list[int]] = []
    for i in range(len(seq) - w + 1):
        win = seq[i:i + w]
        c, g, cg = win.count("C"), win.count("G"), win.count("CG")
        if (c + g) / w > 0.5 and c * g and cg * w / (c * g) > 0.6:
            if regions and i < regions[-1][1]:
                regions[-1][1] = i + w
            else:
                regions.append([i, i + w])
    return [(seq.index("CG", lo), seq.rindex("CG", lo, hi) + 2) for lo, hi in regions]


@pytest.mark.parametrize("seed", range(6))
def test_cpg_islands_match_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    blocks = [random_seq(rng.randint(50, 250), rng.choice(["ACGT", "CGA", "CGT", "AT", "CG"]),
                         seed * 10 + k) for k in range(5)]
    seq = "".join(blocks)
    got = [(i["start"], i["end"]) for i in cpg(seq)["islands"]]
    assert got == brute_force_islands(seq)


def test_short_sequence_is_one_window() -> None:
    d = cpg("CG" * 50)
    assert d["islands"] == [{"start": 0, "end": 100, "gc": 1.0, "obs_exp": 2.0}]
    assert cpg("AT" * 50)["n_islands"] == 0


# ---- promoter_elements ---------------------------------------------------------------------

FLANK = "GGGGG" * 8
SPACER17 = "GCGCGCGCGCGCGCGCG"


def test_planted_sigma70_pair_found() -> None:
    assert len(SPACER17) == 17
    s70 = promoter(FLANK + "TTGACA" + SPACER17 + "TATAAT" + FLANK)["sigma70"]
    assert s70 == {"box35_start": 40, "box35": "TTGACA", "box10_start": 63, "box10": "TATAAT",
                   "spacer": 17, "matches": 12}
    assert promoter(FLANK + "TTGACA" + SPACER17 + "TATACT" + FLANK)["sigma70"]["matches"] == 11


def test_planted_sigma70_with_15bp_spacer() -> None:
    s70 = promoter("TTGACA" + "C" * 15 + "TATAAT")["sigma70"]
    assert (s70["box10_start"], s70["spacer"], s70["matches"]) == (21, 15, 12)


def test_sigma70_tie_prefers_17bp_spacer() -> None:
    seq = "TTGACA" + "C" * 15 + "TATAAT" + "G" * 20 + "TTGACA" + SPACER17 + "TATAAT"
    s70 = promoter(seq)["sigma70"]
    assert (s70["box35_start"], s70["spacer"], s70["matches"]) == (47, 17, 12)


def test_tata_box_and_inr() -> None:
    assert promoter("CCCCTATAAAAGCCCC")["tata"] == {"start": 4, "site": "TATAAAAG",
                                                    "mismatches": 0}
    assert promoter("G" * 10 + "TCAGTCT" + "G" * 10)["inr_starts"] == [10]  # Y Y A N W Y Y
    assert promoter("G" * 10 + "TCAGTCG" + "G" * 10)["inr_starts"] == []  # last Y missed
    d = promoter("N" * 40)
    assert d["sigma70"]["matches"] == 0 and d["tata"]["mismatches"] == 8 and d["inr_starts"] == []
