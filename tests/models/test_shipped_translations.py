"""Decoding speed work must not change what the shipped model says.

`tests/fixtures/shipped_translations.json` holds the shipped model's best
translation, score and word links for each sentence of
`tests/fixtures/regression_sentences.en` (short, long, odd and out-of-domain
lines), greedy and beam 5, with the default options. A change to the search,
the export or the serving path that alters any of them fails here. When a new
model version ships, its translations are the new reference:

    python tests/models/test_shipped_translations.py --write
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
SENTENCES = FIXTURES / "regression_sentences.en"
EXPECTED = FIXTURES / "shipped_translations.json"
BEAMS = (1, 5)


def translate_all(translator) -> dict:
    sentences = [line.strip() for line in SENTENCES.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    out = {"model_version": translator.info.version}
    for beam in BEAMS:
        out[f"beam_{beam}"] = [
            {"text": r.text, "score": round(r.nbest[0].score, 4),
             "word_alignment": sorted(list(link) for link in r.word_alignment)}
            for r in translator.translate(sentences, beam_size=beam)
        ]
    return out


@pytest.fixture(scope="module")
def translations():
    from nmt.options import DEFAULT_MODEL_DIR
    from nmt.translator import Translator

    return translate_all(Translator.load(REPO / DEFAULT_MODEL_DIR))


@pytest.mark.parametrize("beam", BEAMS)
def test_translations_of_the_shipped_model_are_unchanged(translations, beam):
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    assert translations["model_version"] == expected["model_version"], (
        "the shipped model changed: regenerate the reference with "
        "`python tests/models/test_shipped_translations.py --write`")
    got, want = translations[f"beam_{beam}"], expected[f"beam_{beam}"]
    assert [g["text"] for g in got] == [w["text"] for w in want]
    assert [g["word_alignment"] for g in got] == [w["word_alignment"] for w in want]
    np.testing.assert_allclose([g["score"] for g in got], [w["score"] for w in want], atol=2e-3)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    sys.path.insert(0, str(REPO))
    from nmt.options import DEFAULT_MODEL_DIR
    from nmt.translator import Translator

    result = translate_all(Translator.load(REPO / DEFAULT_MODEL_DIR))
    EXPECTED.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {EXPECTED} (model version {result['model_version']})")
