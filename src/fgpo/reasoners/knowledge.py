"""Background knowledge a genomics-literate model brings to a prompt: genome GC contents, which
organisms are bacteria, where restriction enzymes cut, what a TF's consensus looks like.

These are textbook facts, not values fitted to any collection; the rule reasoners combine them
with what the prompt shows.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

# Genome-wide GC fraction (NCBI genome reports, rounded), keyed by (genus, species); species ''
# = the genus's usual value.
GENOME_GC: dict[tuple[str, str], float] = {
    # bacteria
    ("escherichia", "coli"): 0.508, ("bacillus", "subtilis"): 0.435, ("bacillus", ""): 0.40,
    ("salmonella", ""): 0.522, ("staphylococcus", "aureus"): 0.329,
    ("mycobacterium", "tuberculosis"): 0.656, ("pseudomonas", "aeruginosa"): 0.666,
    ("pseudomonas", ""): 0.62, ("streptomyces", ""): 0.72, ("vibrio", "cholerae"): 0.475,
    ("listeria", ""): 0.38, ("clostridium", ""): 0.29, ("clostridioides", "difficile"): 0.29,
    ("caulobacter", ""): 0.67, ("synechocystis", ""): 0.474, ("synechococcus", ""): 0.55,
    ("helicobacter", "pylori"): 0.39, ("streptococcus", ""): 0.40, ("lactococcus", ""): 0.35,
    ("lactobacillus", ""): 0.45, ("klebsiella", ""): 0.57, ("corynebacterium", ""): 0.54,
    ("shewanella", ""): 0.46, ("campylobacter", ""): 0.305, ("agrobacterium", ""): 0.59,
    ("sinorhizobium", ""): 0.62, ("rhizobium", ""): 0.61, ("deinococcus", ""): 0.666,
    ("thermus", ""): 0.69, ("neisseria", ""): 0.52, ("haemophilus", ""): 0.38,
    ("yersinia", ""): 0.47, ("shigella", ""): 0.51, ("enterococcus", ""): 0.375,
    ("acinetobacter", ""): 0.39, ("legionella", ""): 0.38, ("chlamydia", ""): 0.41,
    ("borrelia", ""): 0.29, ("treponema", ""): 0.53, ("zymomonas", ""): 0.46,
    ("geobacter", ""): 0.61, ("mycoplasma", ""): 0.30, ("rickettsia", ""): 0.32,
    # eukaryotes
    ("homo", "sapiens"): 0.41, ("mus", "musculus"): 0.42, ("rattus", "norvegicus"): 0.42,
    ("danio", "rerio"): 0.365, ("gallus", "gallus"): 0.42, ("bos", "taurus"): 0.42,
    ("sus", "scrofa"): 0.42, ("xenopus", ""): 0.40, ("drosophila", "melanogaster"): 0.42,
    ("caenorhabditis", "elegans"): 0.354, ("arabidopsis", "thaliana"): 0.36,
    ("oryza", "sativa"): 0.436, ("zea", "mays"): 0.47, ("saccharomyces", "cerevisiae"): 0.383,
    ("schizosaccharomyces", "pombe"): 0.36, ("plasmodium", "falciparum"): 0.194,
    ("candida", "albicans"): 0.334, ("dictyostelium", ""): 0.224,
}
COMMON_NAMES: dict[str, tuple[str, str]] = {
    "human": ("homo", "sapiens"), "mouse": ("mus", "musculus"), "murine": ("mus", "musculus"),
    "rat": ("rattus", "norvegicus"), "zebrafish": ("danio", "rerio"),
    "chicken": ("gallus", "gallus"), "cow": ("bos", "taurus"), "bovine": ("bos", "taurus"),
    "pig": ("sus", "scrofa"), "fly": ("drosophila", "melanogaster"),
    "worm": ("caenorhabditis", "elegans"), "yeast": ("saccharomyces", "cerevisiae"),
    "rice": ("oryza", "sativa"), "maize": ("zea", "mays"), "arabidopsis": ("arabidopsis", "thaliana"),
}
BACTERIA = {g for (g, _), gc in GENOME_GC.items()} - {
    "homo", "mus", "rattus", "danio", "gallus", "bos", "sus", "xenopus", "drosophila",
    "caenorhabditis", "arabidopsis", "oryza", "zea", "saccharomyces", "schizosaccharomyces",
    "plasmodium", "candida", "dictyostelium"}
VERTEBRATES = {"homo", "mus", "rattus", "danio", "gallus", "bos", "sus", "xenopus"}
_BACTERIAL_WORDS = re.compile(r"bacteri|prokaryot|archae|microb", re.I)
_VERTEBRATE_WORDS = re.compile(r"mammal|vertebrate|primate", re.I)
_OTHER_EUK_WORDS = re.compile(r"plant|fung|insect|nematode|protist", re.I)


def organism_of(text: str) -> tuple[str, str] | None:
    """(genus, species) of the first organism the text names: 'E. coli', 'Escherichia coli',
    'B. subtilis', 'Bacillus', 'human', 'mouse', ..."""
    low = text.lower()
    for word, key in COMMON_NAMES.items():
        if re.search(rf"\b{word}\b", low):
            return key
    words = re.findall(r"[a-z]+", low)
    for genus, species in zip(words, words[1:]):
        for (g, s) in GENOME_GC:
            if s and s == species and (g == genus or (len(genus) == 1 and g.startswith(genus))):
                return (g, s)
    for (g, s) in GENOME_GC:
        if re.search(rf"\b{g}\b", low):
            return (g, s)
    return None


def lineage(text: str) -> str:
    """'bacteria', 'vertebrate' or 'eukaryote' (plants, fungi, invertebrates) as the text says;
    'unknown' when it names no organism (e.g. the importer's default 'genomic')."""
    org = organism_of(text)
    if org:
        return ("bacteria" if org[0] in BACTERIA else "vertebrate" if org[0] in VERTEBRATES
                else "eukaryote")
    if _BACTERIAL_WORDS.search(text):
        return "bacteria"
    if _VERTEBRATE_WORDS.search(text):
        return "vertebrate"
    if _OTHER_EUK_WORDS.search(text):
        return "eukaryote"
    return "unknown"


def genome_gc(text: str) -> float | None:
    """Genome GC of the organism the text names (genus value when the species is unlisted)."""
    org = organism_of(text)
    if org is None:
        return None
    return GENOME_GC.get(org, GENOME_GC.get((org[0], "")))


def genome_gc_of_name(name: str) -> float | None:
    """Genome GC of an organism option such as 'Escherichia coli'."""
    return genome_gc(name)


@lru_cache(maxsize=None)
def cut_offset(enzyme: str) -> int | None:
    """Where `enzyme` cuts, counted from its site's first base (Bio.Restriction's fst5)."""
    from Bio import Restriction
    enz = getattr(Restriction, enzyme, None)
    return int(enz.fst5) if enz is not None and hasattr(enz, "fst5") else None


@lru_cache(maxsize=None)
def recognition_site(enzyme: str) -> str:
    from Bio import Restriction
    enz = getattr(Restriction, enzyme, None)
    return str(enz.site) if enz is not None else ""


@lru_cache(maxsize=None)
def consensus_core(tf: str, matrix_id: str = "") -> str:
    """The 6 central bases of a TF's JASPAR consensus (what a model may remember): the matrix
    the question names, else the TF's oldest JASPAR profile (its canonical one)."""
    from pyjaspar import jaspardb
    db = jaspardb(release="JASPAR2024")
    motif = db.fetch_motif_by_id(matrix_id) if matrix_id else None
    if motif is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pyjaspar warns on an unknown name
            found = db.fetch_motifs_by_name(tf.upper()) or db.fetch_motifs_by_name(tf)
        if not found:
            return ""
        motif = min(found, key=lambda m: m.matrix_id)
    cons = str(motif.consensus)
    k = (len(cons) - 6) // 2
    return cons[k:k + 6]
