"""Task and run ids (shared/domain/ids.py): ULIDs whose time is the first due ms and whose top 10
random bits are the shard, so an id names its item's home (bucket and shard)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.buckets import bucket_of, choose_shard
from shared.domain.ids import (
    ALPHABET,
    ID_LENGTH,
    LAST_DUE_MS,
    MAX_SHARDS,
    TaskKey,
    new_run_id,
    new_task_id,
    parse_task_id,
    ulid,
)

pytestmark = pytest.mark.unit

MAX_TIME_MS = (1 << 48) - 1
ULID_TEXT = re.compile(r"\A[0-7][0-9A-HJKMNP-TV-Z]{25}\Z")
ULID_ANY_CASE = re.compile(ULID_TEXT.pattern, re.IGNORECASE | re.ASCII)  # ASCII: "\u017f" is no "s"

due_times = st.one_of(st.integers(0, LAST_DUE_MS), st.integers(1_700_000_000_000, 2_000_000_000_000))
ulid_times = st.integers(0, MAX_TIME_MS)
shards = st.integers(0, MAX_SHARDS - 1)
random_bytes = st.binary(min_size=10, max_size=10)


def fixed(data: bytes):
    """A ``randbytes`` that returns ``data`` (which must be as long as asked for)."""

    def randbytes(size: int) -> bytes:
        assert size == len(data)
        return data

    return randbytes


def decode(text: str) -> int:
    return int("".join(f"{ALPHABET.index(c):05b}" for c in text), 2)


@settings(max_examples=150)
@given(due_ms=due_times, shard=shards, data=random_bytes)
def test_parse_task_id_round_trips_new_task_id(due_ms: int, shard: int, data: bytes) -> None:
    task_id = new_task_id(due_ms, shard, fixed(data))
    assert parse_task_id(task_id) == TaskKey(due_ms=due_ms, shard=shard)
    assert parse_task_id(task_id.lower()) == TaskKey(due_ms=due_ms, shard=shard)


@settings(max_examples=150)
@given(due_ms=due_times, shard=shards, data=random_bytes)
def test_task_id_layout_time_then_shard_then_random(due_ms: int, shard: int, data: bytes) -> None:
    task_id = new_task_id(due_ms, shard, fixed(data))
    assert len(task_id) == ID_LENGTH
    assert ULID_TEXT.match(task_id)
    value = decode(task_id)
    assert value >> 80 == due_ms  # the 48-bit ULID time is the first due time
    assert (value >> 70) & 0x3FF == shard  # the top 10 of the 80 random bits are the shard
    # the other 70 bits are the random source's low 70 bits
    assert value & ((1 << 70) - 1) == int.from_bytes(data, "big") & ((1 << 70) - 1)


@given(due_ms=due_times, shard=shards)
def test_task_ids_with_the_default_random_source(due_ms: int, shard: int) -> None:
    first, second = new_task_id(due_ms, shard), new_task_id(due_ms, shard)
    assert first != second
    assert parse_task_id(first) == parse_task_id(second) == TaskKey(due_ms, shard)


@settings(max_examples=150)
@given(a=st.tuples(due_times, shards, random_bytes), b=st.tuples(due_times, shards, random_bytes))
def test_ids_sort_by_first_due_time(a: tuple[int, int, bytes], b: tuple[int, int, bytes]) -> None:
    (earlier, shard_a, data_a), (later, shard_b, data_b) = a, b
    first, second = new_task_id(earlier, shard_a, fixed(data_a)), new_task_id(later, shard_b, fixed(data_b))
    if earlier < later:
        assert first < second
    elif earlier > later:
        assert first > second


@settings(max_examples=300)
@given(time_ms=ulid_times, bits=st.integers(0, (1 << 80) - 1))
def test_a_ulid_is_its_value_in_crockford_base32_most_significant_first(time_ms: int, bits: int) -> None:
    text = ulid(time_ms, bits)
    assert ULID_TEXT.match(text)
    assert decode(text) == (time_ms << 80) | bits


def test_known_ulid_vector() -> None:
    # The ULID specification's example: ulid(1469918176385) -> 01ARYZ6S41TSV4RRFFQ69G5FAV.
    assert parse_task_id("01ARYZ6S41TSV4RRFFQ69G5FAV").due_ms == 1_469_918_176_385
    assert ulid(1_469_918_176_385, 0) == "01ARYZ6S41" + "0" * 16
    assert ulid(0, 0) == "0" * 26
    assert ulid(MAX_TIME_MS, (1 << 80) - 1) == "7" + "Z" * 25


def test_shard_is_the_top_ten_random_bits() -> None:
    zeros, ones = fixed(bytes(10)), fixed(b"\xff" * 10)
    assert parse_task_id(new_task_id(5, MAX_SHARDS - 1, zeros)).shard == MAX_SHARDS - 1
    assert parse_task_id(new_task_id(5, 0, ones)).shard == 0  # random bits never leak into the shard
    assert parse_task_id(new_task_id(5, 0, ones)).due_ms == 5
    assert new_task_id(0, 1, zeros) == "0" * 11 + "1" + "0" * 14  # 1 << 70 in base 32: 14 * 5 = 70


@pytest.mark.parametrize("shard", [-1, MAX_SHARDS, MAX_SHARDS + 5])
def test_shard_out_of_range_is_refused(shard: int) -> None:
    with pytest.raises(ValueError, match="shard"):
        new_task_id(1_700_000_000_000, shard)


@pytest.mark.parametrize("due_ms", [-1, MAX_TIME_MS + 1])
def test_time_out_of_the_ulid_range_is_refused(due_ms: int) -> None:
    with pytest.raises(ValueError, match="time"):
        new_task_id(due_ms, 0)
    with pytest.raises(ValueError, match="time"):
        new_run_id(due_ms)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25 characters
        "01ARZ3NDEKTSV4RRFFQ69G5FAVX",  # 27 characters
        "01ARZ3NDEKTSV4RRFFQ69G5FAU",  # U is not Crockford base32
        "01ARZ3NDEKTSV4RRFFQ69G5FAI",
        "01ARZ3NDEKTSV4RRFFQ69G5FAL",
        "01ARZ3NDEKTSV4RRFFQ69G5FAO",
        "01ARZ3NDEKTSV4RRFFQ69G5FA-",
        "01ARZ3NDEKTSV4RRFFQ69G5FA ",
        "8" + "0" * 25,  # 130 bits: over the 128 a ULID has
        "Z" * 26,
        # non-ASCII letters that str.upper() turns into alphabet characters must not alias an id
        "01ARYZ6S41TSV4RRFFQ69G5FA\u017f",  # LATIN SMALL LETTER LONG S: upper() is "S"
        "0" * 25 + "\u00df",  # SHARP S: upper() is "SS", 27 characters of valid base32
        "0" * 24 + "\ufb00" + "0",  # LATIN SMALL LIGATURE FF: upper() is "FF"
    ],
)
def test_parse_task_id_refuses_what_is_not_an_id(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        parse_task_id(text)


@settings(max_examples=100)
@given(
    due_ms=due_times,
    shard=shards,
    position=st.integers(1, ID_LENGTH - 1),
    lookalike=st.sampled_from(["\u017f", "\u00df", "\ufb00", "\u0131", "\uff10", "\u0660"]),
)
def test_a_non_ascii_lookalike_never_aliases_an_id(due_ms: int, shard: int, position: int, lookalike: str) -> None:
    """Long s, sharp s, the ff ligature, dotless i, a full-width and an Arabic-Indic digit."""
    task_id = new_task_id(due_ms, shard)
    with pytest.raises(ValueError):  # noqa: PT011 - length, alphabet or ASCII
        parse_task_id(task_id[:position] + lookalike + task_id[position + 1 :])


ID_CHARS = ALPHABET + ALPHABET.lower() + "ILOU-_ \u017f\u00df\ufb00\u0131"


@settings(max_examples=150)
@given(
    text=st.text(alphabet=ID_CHARS, max_size=30)
    | st.builds(
        lambda head, tail: head + "".join(tail),
        st.sampled_from("01234567"),
        st.lists(st.sampled_from(ID_CHARS.strip("-_ ")), min_size=25, max_size=25),
    )
)
def test_parse_task_id_accepts_exactly_the_ulids(text: str) -> None:
    is_task_id = ULID_ANY_CASE.match(text) is not None and decode(text.upper()) >> 80 <= LAST_DUE_MS
    if is_task_id:
        key = parse_task_id(text)
        assert 0 <= key.due_ms <= LAST_DUE_MS
        assert 0 <= key.shard < MAX_SHARDS
        random_part = decode(text.upper()).to_bytes(16, "big")[6:]
        assert new_task_id(key.due_ms, key.shard, fixed(random_part)) == text.upper()
    else:
        with pytest.raises(ValueError):  # noqa: PT011 - length, alphabet or overflow
            parse_task_id(text)


@settings(max_examples=100)
@given(now_ms=ulid_times, data=random_bytes)
def test_run_ids_are_stamped_with_their_creation_time(now_ms: int, data: bytes) -> None:
    run_id = new_run_id(now_ms, fixed(data))
    assert ULID_TEXT.match(run_id)
    assert decode(run_id) == (now_ms << 80) | int.from_bytes(data, "big")


@pytest.mark.parametrize("due_ms", [LAST_DUE_MS + 1, MAX_TIME_MS])
def test_an_id_past_year_9999_names_no_task(due_ms: int) -> None:
    """A ULID's 48 bits run to year 10889; no task is due after 9999 and no bucket is named
    there, so such an id is refused (as not found or not an id), never a crash naming a bucket."""
    text = ulid(due_ms, 0)
    with pytest.raises(ValueError, match="9999"):
        parse_task_id(text)
    with pytest.raises(ValueError, match="9999"):
        new_task_id(due_ms, 0)
    assert parse_task_id(ulid(LAST_DUE_MS, 0)).due_ms == LAST_DUE_MS
    assert bucket_of(LAST_DUE_MS) == "999912312359"


@settings(max_examples=100)
@given(
    due_ms=st.integers(0, 253_402_300_799_999),
    random_value=st.integers(0, 2**64),
    shard_count=st.integers(1, MAX_SHARDS),
)
def test_a_task_id_names_its_bucket_and_shard(due_ms: int, random_value: int, shard_count: int) -> None:
    shard = choose_shard(random_value, shard_count)
    key = parse_task_id(new_task_id(due_ms, shard))
    assert key.shard < shard_count
    assert bucket_of(key.due_ms) == bucket_of(due_ms)
