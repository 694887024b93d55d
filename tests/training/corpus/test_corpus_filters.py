"""The pair rules of `nmt corpus` (training/corpus/filters.py)."""

import pytest

from training.corpus.filters import (
    FilterConfig,
    drop_reason,
    fraction_of,
    near_key,
    numbers_of,
    side_key,
)

RULES = FilterConfig(max_words=6, max_word_ratio=2.0, char_ratio=(0.5, 2.0),
                     min_chars_for_ratio=10)


@pytest.mark.parametrize("english, french, reason", [
    ("Hello.", "", "empty"),
    ("one two three four five six seven", "un deux", "too_long"),
    ("a b c d e f", "a b c d e f", "copy"),
    ("See section 12.", "Voir l'article 47.", "numbers"),
    ("See section 12.", "Voir l'article 12.", None),
])
def test_each_rule_names_itself(english, french, reason):
    assert drop_reason(english, french, RULES) == reason


def test_the_word_ratio_is_judged_only_past_three_words():
    config = FilterConfig(max_words=20, max_word_ratio=2.0)
    assert drop_reason("Go.", "Va-t'en tout de suite !", config) is None
    assert drop_reason("I go now ok.", "Je m'en vais tout de suite , d'accord , merci .",
                       config) == "word_ratio"


def test_the_character_ratio_catches_a_provision_cut_elsewhere():
    english = "A person in possession of information obtained under this Act may communicate it"
    assert drop_reason(english, "La communication est permise :", FilterConfig(
        max_words=50, char_ratio=(0.5, 2.0), min_chars_for_ratio=20)) == "char_ratio"
    # Short pairs are not judged: "OK" / "D'accord" is a fine pair.
    assert drop_reason("OK", "D'accord", RULES) is None


def test_copies_are_case_insensitive_and_can_be_kept():
    assert drop_reason("Economic Warfare", "economic warfare", RULES) == "copy"
    assert drop_reason("Economic Warfare", "Economic Warfare",
                       FilterConfig(copies=False)) is None


def test_numbers_are_compared_across_separators():
    assert numbers_of("a fine of $25,000.50 and 12 months") == ["12", "2500050"]
    assert numbers_of("une amende de 25 000,50 $ et 12 mois") == ["12", "2500050"]
    assert numbers_of("une amende de 25\u202f000,50 $") == ["2500050"]


def test_a_pair_citing_other_numbers_is_dropped_but_spelt_out_numbers_are_kept():
    config = FilterConfig()
    assert drop_reason("See section 12 of the Act.", "Voir l’article 47 de la loi.",
                       config) == "numbers"
    assert drop_reason("Our class consists of 40 boys.",
                       "Notre classe se compose de quarante garçons.", config) is None
    # Some shared: a date shortened in French ("after July 1, 2006" / "après juin 2006").
    assert drop_reason("after July 1, 2006, or", "après juin 2006, ou", config) is None


def test_side_keys_ignore_case_width_and_spacing():
    assert side_key("Thank  you.") == side_key("thank you.")
    assert side_key("Ｔhank you.") == side_key("Thank you.")  # NFKC: full-width T
    assert side_key("Thank you.") != side_key("Thank you!")


def test_near_keys_ignore_digits_and_punctuation_but_not_words():
    assert near_key("— SOR/2016-250, s. 2", "— DORS/2016-250, art. 2") == near_key(
        "— SOR/2019-17, s. 5", "— DORS/2019-17, art. 5")
    assert near_key("Save the file", "Enregistrer le fichier") != near_key(
        "Open the file", "Ouvrir le fichier")


def test_fractions_are_fixed_by_seed_and_parts():
    values = [fraction_of(1, "laws", str(i)) for i in range(2000)]
    assert values == [fraction_of(1, "laws", str(i)) for i in range(2000)]
    assert all(0 <= v < 1 for v in values)
    assert 0.45 < sum(v < 0.5 for v in values) / len(values) < 0.55
    assert fraction_of(2, "laws", "0") != fraction_of(1, "laws", "0")


@pytest.mark.parametrize("values, message", [
    ({"max_words": 0}, "max_words"),
    ({"max_word_ratio": 0.5}, "max_word_ratio"),
    ({"char_ratio": [1.5, 2.0]}, "char_ratio"),
    ({"char_ratio": [0.5]}, "char_ratio"),
])
def test_bad_thresholds_say_what_to_change(values, message):
    with pytest.raises(ValueError, match=message):
        FilterConfig(**values)
