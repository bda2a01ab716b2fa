"""The argument checks ``send()`` runs before a record is queued."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cproducer import errors
from cproducer.producer.producer_args import check_timestamp_type, check_topic


@pytest.mark.parametrize("stamp", [0, 1_700_000_000_000, np.int64(5), np.uint32(7)])
def test_integer_timestamps_pass(stamp: Any) -> None:
    check_timestamp_type(stamp)


@pytest.mark.parametrize("stamp", [1.5, np.float64(2.0), True, "1", b"1"])
def test_other_timestamps_raise_type_error_naming_the_argument(stamp: Any) -> None:
    expected = f"timestamp_ms must be an int .* got {type(stamp).__name__}"
    with pytest.raises(TypeError, match=expected):
        check_timestamp_type(stamp)


def test_a_topic_of_another_type_is_a_type_error_a_bad_name_invalid_topic() -> None:
    with pytest.raises(TypeError, match="topic must be a str, got bytes"):
        check_topic(b"events")
    with pytest.raises(errors.InvalidTopicError, match="characters"):
        check_topic("bad topic")
