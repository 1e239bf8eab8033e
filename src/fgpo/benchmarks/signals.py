"""Biological signal models used to generate questions offline from a seeded RNG.

Backgrounds with a chosen GC content and CpG depletion (methylation-driven C->T loss at CpG,
as in bulk mammalian DNA), sites sampled from real JASPAR matrices, near-miss sites (hard
negatives), splice sites from consensus matrices, and coding sequences from organism models.
"""

from __future__ import annotations

import numpy as np
from Bio.Seq import Seq

from fgpo.tools.composition import cpg_observed_expected
from fgpo.tools.motifs import load_motif, load_pssm, pssm_threshold
from fgpo.tools.organism import ORGANISMS
from fgpo.tools.orfs import STOPS
from fgpo.tools.splice import ACCEPTOR_FREQ, DONOR_FREQ, splice_pssm, splice_threshold

BASES = np.array(list("ACGT"))
CODONS = [a + b + c for a in "ACGT" for b in "ACGT" for c in "ACGT"]
SENSE_CODONS = [c for c in CODONS if c not in STOPS]


def revcomp(seq: str) -> str:
    return str(Seq(seq).reverse_complement())


def random_dna(rng: np.random.Generator, n: int, gc: float) -> str:
    """i.i.d. bases with GC fraction `gc` (G and C equally likely, as are A and T)."""
    p = np.array([(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2])
    return "".join(rng.choice(BASES, size=n, p=p))


def deplete_cpg(rng: np.random.Generator, seq: str, target_oe: float, max_rounds: int = 12) -> str:
    """Break CpG dinucleotides until CpG o/e <= target_oe, keeping base composition.

    Each broken CpG becomes GpC (composition, hence GC content, is unchanged), so GC and CpG
    o/e can be set independently, as in GC-rich but CpG-depleted heterochromatin.
    """
    s = list(seq)
    for _ in range(max_rounds):
        if cpg_observed_expected("".join(s)) <= target_oe:
            break
        for i in range(len(s) - 1):
            if s[i] == "C" and s[i + 1] == "G" and rng.random() < 0.5:
                s[i], s[i + 1] = "G", "C"
    return "".join(s)


def background(rng: np.random.Generator, n: int, gc: float, cpg_oe: float | None = None) -> str:
    """Random DNA with GC `gc`; with `cpg_oe`, CpG depleted to at most that observed/expected."""
    seq = random_dna(rng, n, gc)
    return deplete_cpg(rng, seq, cpg_oe) if cpg_oe is not None else seq


def plant(seq: str, site: str, pos: int) -> str:
    return seq[:pos] + site + seq[pos + len(site):]


def motif_probabilities(release: str, matrix_id: str) -> np.ndarray:
    """[width, 4] base probabilities (A, C, G, T) of a JASPAR matrix."""
    pwm = load_motif(release, matrix_id).counts.normalize(pseudocounts=0.5)
    return np.array([[pwm[b][i] for b in "ACGT"] for i in range(pwm.length)])


def pssm_score(pssm, site: str) -> float:
    return float(pssm.calculate(site)) if len(site) == pssm.length else float("-inf")


def sample_site(rng: np.random.Generator, release: str, matrix_id: str, fpr: float,
                margin: float = 1.0, pseudocount: float = 0.5) -> str:
    """A site drawn from the matrix's own base distribution, scoring >= threshold + margin."""
    probs = motif_probabilities(release, matrix_id)
    pssm = load_pssm(release, matrix_id, pseudocount)
    thr = pssm_threshold(release, matrix_id, fpr, pseudocount)
    target = min(thr + margin, float(pssm.max) - 1e-6)
    for _ in range(5000):
        site = "".join(BASES[rng.choice(4, p=row)] for row in probs)
        if pssm_score(pssm, site) >= target:
            return site
    # a low-information matrix: fall back to the consensus, which scores the maximum
    return "".join(BASES[int(np.argmax(row))] for row in probs)


def near_miss(rng: np.random.Generator, site: str, pssm, threshold: float, margin: float = 1.0
              ) -> str:
    """Mutate the most informative positions of `site` until it scores < threshold - margin.

    The result still resembles the motif (a hard negative, as a near-miss binding site).
    """
    s = list(site)
    order = np.argsort([-max(pssm[b][i] for b in "ACGT") for i in range(len(s))])
    for i in order:
        if pssm_score(pssm, "".join(s)) < threshold - margin:
            break
        worst = min("ACGT", key=lambda b: pssm[b][i])
        s[i] = worst if rng.random() < 0.7 else str(rng.choice([b for b in "ACGT" if b != s[i]]))
    return "".join(s)


def splice_site(rng: np.random.Generator, kind: str, fpr: float, margin: float = 2.0) -> str:
    """A donor (9 nt) or acceptor (15 nt) site sampled from the consensus matrix."""
    freq = np.array(DONOR_FREQ if kind == "donor" else ACCEPTOR_FREQ, dtype=float)
    probs = (freq + 0.25) / (freq + 0.25).sum(axis=1, keepdims=True)
    pssm = splice_pssm(kind)
    target = splice_threshold(kind, fpr) + margin
    for _ in range(5000):
        site = "".join(BASES[rng.choice(4, p=row)] for row in probs)
        if pssm_score(pssm, site) >= target:
            return site
    raise RuntimeError(f"could not sample a {kind} site above {target}")


def coding_sequence(rng: np.random.Generator, n_codons: int, organism: str | None = None,
                    gc3_shift: float = 0.0) -> str:
    """ATG + `n_codons` sense codons + a stop codon.

    With `organism`, codons follow that organism's codon-position model (GC at the third
    position shifted by `gc3_shift`, as genes vary around their genome's mean); else uniform.
    """
    if organism is None:
        body = rng.choice(SENSE_CODONS, size=n_codons)
        return "ATG" + "".join(body) + str(rng.choice(STOPS))
    pos = [np.array(p, dtype=float) for p in ORGANISMS[organism]]
    p3 = pos[2].copy()
    gc3 = p3[1] + p3[2]
    new_gc3 = float(np.clip(gc3 + gc3_shift, 0.02, 0.98))
    p3[[1, 2]] *= new_gc3 / gc3
    p3[[0, 3]] *= (1 - new_gc3) / (1 - gc3)
    pos[2] = p3 / p3.sum()
    codons = []
    while len(codons) < n_codons:
        c = "".join(BASES[rng.choice(4, p=p / p.sum())] for p in pos)
        if c not in STOPS:
            codons.append(c)
    return "ATG" + "".join(codons) + str(rng.choice(STOPS))


def shuffle(rng: np.random.Generator, seq: str) -> str:
    """Mononucleotide shuffle: same composition, signals destroyed (a shuffled control)."""
    return "".join(rng.permutation(list(seq)))
