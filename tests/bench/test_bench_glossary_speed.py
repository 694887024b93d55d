"""`bench/glossary_speed.py`: a large glossary made from news text, and the step timed."""

from bench.glossary_speed import built, large_glossary, timed


def test_a_large_glossary_of_frequent_words_and_pairs(tmp_path):
    news = tmp_path / "out-of-domain"
    news.mkdir()
    (news / "newstest2012.en").write_text(
        "the patient was hospitalized\nthe patient left\nthe patient left\n", encoding="utf-8")
    (news / "newstest2013.en").write_text("hospitalize\nhospitalize\n", encoding="utf-8")

    entries = dict(large_glossary(tmp_path, entries=4, skip=1))  # `the` left out

    assert len(entries) == 4
    assert entries["patient"] == "terme patient", "the most frequent word first"
    assert entries["patient left"] == "terme patient left", "then pairs as frequent"
    assert entries["hospitalize"] == "hospitalizeiser", "a verb only reads as a French verb"


def test_the_step_is_timed_as_it_ships_and_as_before():
    glossary, before, seconds = built([("patient", "patient"), ("hospitalize", "hospitaliser")])
    assert set(seconds) == {"checked and indexed", "indexed", "indexed as before"}
    assert before.forms == frozenset({"plural"}) and not before.acronym_case
    sentences = ["Two patients were hospitalized."]
    outputs = [("Deux patients ont été hôpitals.", ((0, 0), (1, 1), (2, 2), (2, 3), (3, 4)))]
    assert timed(sentences, outputs, glossary)[1] == 2
    assert timed(sentences, outputs, before, agree=False)[1] == 1, "plurals only: `patients`"
