"""The logged policy model's input: what `predict` accepts, and what it refuses naming the row
and field (the same rules as the importer's for a sequence)."""

from __future__ import annotations

import pandas as pd
import pytest

from fgpo.errors import InputError
from fgpo.policy.pyfunc import EXAMPLE, questions_from_frame


def test_a_valid_frame_becomes_questions_with_normalised_dna():
    frame = pd.DataFrame({"question": ["Is there a TATA box?", "Which allele?"],
                          "sequences": ['{"seq": "acgt\\nNNTATAAA"}',
                                        '{"ref": "ACGT", "alt": "ACTT"}']})
    qs = questions_from_frame(frame)
    assert [q.sequences for q in qs] == [{"seq": "ACGTNNTATAAA"},
                                        {"ref": "ACGT", "alt": "ACTT"}]
    assert [q.question for q in qs] == list(frame.question)
    assert len(questions_from_frame(EXAMPLE)) == 1


@pytest.mark.parametrize("frame, record, field, words", [
    (pd.DataFrame({"question": [], "sequences": []}), None, "question", "no rows"),
    (pd.DataFrame({"question": ["q"]}), None, "sequences", "column"),
    (pd.DataFrame({"sequences": ['{"seq": "ACGT"}']}), None, "question", "column"),
    (pd.DataFrame({"question": ["q", "q"], "sequences": ['{"seq": "ACGT"}', '{"seq": "ACGTXZ!!"}']}),
     "1", "sequences.seq", "outside IUPAC DNA"),
    (pd.DataFrame({"question": ["q"], "sequences": ['{"p": "MEEPQSDPSVEPPLSQETFSDLWKLL"}']}),
     "0", "sequences.p", "outside IUPAC DNA"),
    (pd.DataFrame({"question": ["q"], "sequences": [""]}), "0", "sequences", "JSON"),
    (pd.DataFrame({"question": ["q"], "sequences": ["{}"]}), "0", "sequences", "non-empty"),
    (pd.DataFrame({"question": ["q"], "sequences": ['["ACGT"]']}), "0", "sequences", "object"),
    (pd.DataFrame({"question": ["q"], "sequences": ['{"seq": ""}']}), "0", "sequences.seq",
     "empty sequence"),
    (pd.DataFrame({"question": ["q"], "sequences": ['{"seq": 12}']}), "0", "sequences.seq",
     "DNA string"),
    (pd.DataFrame({"question": ["  "], "sequences": ['{"seq": "ACGT"}']}), "0", "question",
     "non-empty"),
])
def test_bad_input_is_refused_naming_row_and_field(frame, record, field, words):
    with pytest.raises(InputError, match=words) as info:
        questions_from_frame(frame)
    assert (info.value.record, info.value.field) == (record, field)
