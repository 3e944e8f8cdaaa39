"""Hypothesis strategies for what a client can send as a cursor: DRF's cursor is base64 of
``o=<offset>&r=<reverse>&p=<position>``; these are that with garbage in each field (and
well-formed values, so some land on a page), unknown and repeated fields, unencoded text,
binary, and raw text."""

from __future__ import annotations

from base64 import b64encode
from datetime import UTC, timedelta, timezone
from urllib.parse import urlencode

from hypothesis import strategies as st

printable = st.characters(exclude_categories=["Cs"])
garbage = st.one_of(
    st.sampled_from(["", "None", "nan", "inf", "1e400", "-1", "+1", "1.5", "garbage", "\x00"]),
    st.from_regex(r"-?[0-9]{1,30}", fullmatch=True),
    st.text(printable, max_size=30),
)
# UTC offsets that push years 1 and 9999 out of range once converted to UTC
offsets_from_utc = st.sampled_from(
    [UTC, *(timezone(timedelta(minutes=m)) for m in (-23 * 60 - 59, 23 * 60 + 59, 330))]
)
timestamps = st.datetimes(timezones=offsets_from_utc)
positions = st.one_of(
    timestamps.map(str),  # as DRF writes a position
    timestamps.map(lambda at: at.isoformat().replace("+00:00", "Z")),
    st.datetimes().map(str),  # no UTC offset
    st.dates().map(str),
    garbage,
)
tokens = st.fixed_dictionaries(
    {},
    optional={
        "o": st.integers(0, 1000).map(str) | garbage,
        "r": st.sampled_from(["0", "1"]) | garbage,
        "p": positions,
    },
)
positioned = st.fixed_dictionaries(
    {"p": positions},
    optional={"o": st.integers(0, 1000).map(str), "r": st.sampled_from(["0", "1"])},
).map(urlencode)
fields = st.tuples(
    st.sampled_from(["o", "r", "p", "q", ""]) | st.text(printable, max_size=3), garbage
)
texts = st.one_of(
    tokens.map(urlencode),  # as DRF encodes a cursor
    tokens.map(lambda fields: "&".join(f"{k}={v}" for k, v in fields.items())),  # unencoded
    st.lists(fields, max_size=4).map(urlencode),  # unknown, repeated fields
    st.text(printable, max_size=60),
)


def b64(data: str | bytes) -> str:
    return b64encode(data.encode() if isinstance(data, str) else data).decode()


def cursors() -> st.SearchStrategy[str]:
    return st.one_of(
        positioned.map(b64),  # a well-formed offset and direction: the position is what is tried
        texts.map(b64),
        st.binary(max_size=60).map(b64),
        st.text(printable, max_size=60),
    )
