"""Admission control: the five factors, the score, the threshold, the explanation."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from truemem_core.memory.admission import (
    DEFAULT_THRESHOLD,
    AdmissionFactors,
    AdmissionWeights,
    combine,
    consistency,
    novelty,
    score_candidate,
    specificity,
)
from truemem_core.records import Source

PROPERTY = settings(database=None, deadline=None)
unit = st.floats(min_value=0.0, max_value=1.0)
factors = st.builds(AdmissionFactors, unit, unit, unit, unit, unit)


# -- novelty -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("similarity", "expected"),
    [(-0.3, 1.0), (0.0, 1.0), (0.6, 1.0), (0.725, 0.5), (0.85, 0.0), (0.95, 0.0), (1.0, 0.0)],
)
def test_novelty_falls_across_the_band_below_the_dedup_threshold(
    similarity: float, expected: float
) -> None:
    assert novelty(similarity) == pytest.approx(expected)


def test_novelty_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        novelty(math.nan)


@PROPERTY
@given(st.floats(-1, 1), st.floats(-1, 1))
def test_novelty_never_rises_with_similarity(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert novelty(high) <= novelty(low)


# -- specificity ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["Likes things", "Is fine", "ok", "Likes stuff and things sometimes", "Is a good person",
     "Has some stuff going on", "", "   ", "Es algo normal", "Le gustan las cosas", "Está bien"],
)
def test_filler_has_no_specificity(text: str) -> None:
    assert specificity(text) == 0.0


@pytest.mark.parametrize(
    ("vague", "concrete"),
    [
        ("Likes music", "Likes jazz by Miles Davis"),
        ("Uses a database", "Uses PostgreSQL 14"),
        ("Vegan", "Is vegan"),
        ("Has a pet", "Has a dog called Toby"),
        ("Trabaja mucho", "Trabaja como enfermera en el Hospital Clínico"),
        ("Deployed something", "Deployed v2 on Friday and it broke login"),
    ],
)
def test_concrete_texts_are_more_specific(vague: str, concrete: str) -> None:
    assert specificity(concrete) > specificity(vague)


def test_names_and_numbers_raise_specificity() -> None:
    assert specificity("Uses Postgres") > specificity("Uses postgres")
    assert specificity("Has 2 dogs") > specificity("Has dogs")


@PROPERTY
@given(st.text(max_size=200))
def test_specificity_is_in_unit_range(text: str) -> None:
    assert 0.0 <= specificity(text) <= 1.0


# -- reliability and consistency -------------------------------------------------


def test_reliability_follows_the_source() -> None:
    by_source = {
        source: score_candidate("Lives in Berlin", source=source, max_similarity_to_stored=0.0,
                                contradicts_stored=False).factors.reliability
        for source in ("explicit", "manual", "extracted")
    }
    assert by_source == {"explicit": 1.0, "manual": 0.9, "extracted": 0.6}


def test_unknown_source_is_refused() -> None:
    with pytest.raises(ValueError, match="source"):
        score_candidate("Lives in Berlin", source="rumour",  # type: ignore[arg-type]
                        max_similarity_to_stored=0.0, contradicts_stored=False)


@pytest.mark.parametrize(
    ("contradicts", "supersedes", "expected"),
    [(False, False, 1.0), (True, True, 1.0), (True, False, 0.2), (False, True, 1.0)],
)
def test_only_an_unresolved_contradiction_lowers_consistency(
    contradicts: bool, supersedes: bool, expected: float
) -> None:
    assert consistency(contradicts_stored=contradicts, supersedes_stored=supersedes) == expected


def test_a_contradiction_lowers_the_score() -> None:
    def score(contradicts: bool) -> float:
        return score_candidate("Lives in Berlin", source="extracted", max_similarity_to_stored=0.7,
                               contradicts_stored=contradicts).score

    assert score(True) < score(False)


# -- the decision ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["Prefers Python", "Is vegan", "Es alérgica a los cacahuetes", "Uses PostgreSQL 14",
             "Deployed v2 on Friday and it broke login", "Lives in Berlin"],
)
def test_specific_new_facts_are_admitted(text: str) -> None:
    admission = score_candidate(text, source="extracted", max_similarity_to_stored=0.3,
                                contradicts_stored=False)
    assert admission.admitted
    assert admission.score >= DEFAULT_THRESHOLD


@pytest.mark.parametrize("text", ["Likes things", "Is fine", "ok", "Le gustan las cosas"])
def test_filler_is_rejected_and_says_why(text: str) -> None:
    admission = score_candidate(text, source="extracted", max_similarity_to_stored=0.1,
                                contradicts_stored=False)
    assert not admission.admitted
    assert admission.weakest() == "specificity"
    explanation = admission.explain()
    assert explanation.startswith("rejected")
    for factor in ("novelty", "specificity", "reliability", "consistency", "relevance"):
        assert factor in explanation


def test_a_near_duplicate_just_below_the_dedup_threshold_is_rejected() -> None:
    admission = score_candidate("Is vegan", source="extracted", max_similarity_to_stored=0.84,
                                contradicts_stored=False)
    assert not admission.admitted
    assert admission.weakest() == "novelty"


def test_a_paraphrase_in_the_middle_of_the_band_is_still_admitted() -> None:
    assert score_candidate("Lives in Berlin", source="extracted", max_similarity_to_stored=0.75,
                           contradicts_stored=False).admitted


def test_explicit_memories_bypass_admission_but_are_still_scored() -> None:
    admission = score_candidate("Likes things", source="explicit", max_similarity_to_stored=0.1,
                                contradicts_stored=False)
    assert admission.admitted and admission.bypassed
    assert admission.score < DEFAULT_THRESHOLD
    assert admission.explain().startswith("admitted (explicit")


@pytest.mark.parametrize("source", ["manual", "extracted"])
def test_only_explicit_bypasses(source: Source) -> None:
    admission = score_candidate("Likes things", source=source, max_similarity_to_stored=0.1,
                                contradicts_stored=False)
    assert not admission.bypassed and not admission.admitted


def test_threshold_is_a_parameter() -> None:
    def admitted(threshold: float) -> bool:
        return score_candidate("Is vegan", source="extracted", max_similarity_to_stored=0.2,
                               contradicts_stored=False, threshold=threshold).admitted

    assert admitted(0.0) and admitted(0.3) and not admitted(0.99)


def test_weights_are_a_parameter() -> None:
    only_relevance = AdmissionWeights(0, 0, 0, 0, 1)
    admission = score_candidate("Likes things", source="extracted", max_similarity_to_stored=0.1,
                                contradicts_stored=False, relevance=0.8, weights=only_relevance)
    assert admission.score == pytest.approx(0.8)


def test_relevance_defaults_to_a_half_and_is_checked() -> None:
    admission = score_candidate("Lives in Berlin", source="extracted",
                                max_similarity_to_stored=0.0, contradicts_stored=False)
    assert admission.factors.relevance == 0.5
    with pytest.raises(ValueError, match="relevance"):
        score_candidate("Lives in Berlin", source="extracted", max_similarity_to_stored=0.0,
                        contradicts_stored=False, relevance=1.5)


@pytest.mark.parametrize("threshold", [-0.1, 1.1])
def test_threshold_out_of_range_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="threshold"):
        score_candidate("Lives in Berlin", source="extracted", max_similarity_to_stored=0.0,
                        contradicts_stored=False, threshold=threshold)


@pytest.mark.parametrize("weights", [(-1, 1, 1, 1, 1), (0, 0, 0, 0, 0), (math.nan, 1, 1, 1, 1)])
def test_bad_weights_are_refused(weights: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="weights"):
        AdmissionWeights(*weights)


# -- the score as a function ---------------------------------------------------------


def test_perfect_factors_score_one_and_a_zero_factor_sinks_the_score() -> None:
    perfect = AdmissionFactors(1, 1, 1, 1, 1)
    assert combine(perfect) == pytest.approx(1.0)
    assert combine(replace(perfect, specificity=0.0)) < DEFAULT_THRESHOLD
    assert combine(replace(perfect, novelty=0.0)) < DEFAULT_THRESHOLD


@PROPERTY
@given(factors)
def test_score_is_in_unit_range(f: AdmissionFactors) -> None:
    assert 0.0 <= combine(f) <= 1.0


@PROPERTY
@given(factors, st.sampled_from(
    ["novelty", "specificity", "reliability", "consistency", "relevance"]), unit)
def test_raising_any_factor_never_lowers_the_score(
    f: AdmissionFactors, name: str, higher: float
) -> None:
    before = getattr(f, name)
    raised = replace(f, **{name: max(before, higher)})
    assert combine(raised) >= combine(f) - 1e-12


@PROPERTY
@given(st.text(max_size=120), st.floats(-1, 1), st.booleans(), unit,
       st.sampled_from(["explicit", "manual", "extracted"]))
def test_score_candidate_is_bounded_and_consistent(
    text: str, similarity: float, contradicts: bool, relevance: float, source: Source
) -> None:
    admission = score_candidate(text, source=source, max_similarity_to_stored=similarity,
                                contradicts_stored=contradicts, relevance=relevance)
    assert 0.0 <= admission.score <= 1.0
    assert admission.admitted == (source == "explicit" or admission.score >= DEFAULT_THRESHOLD)
