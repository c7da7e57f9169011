"""The copy rule's pieces: what counts as the same code, and which designs are copies."""

from __future__ import annotations

from spade_async.engine.base import Completion
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import Design, DesignJob
from spade_async.selfplay.design.novelty import KnownCodes, code_key, copy_reason
from spade_async.selfplay.generation import duplicate_keepers, reject_copies
from spade_async.testing import COIN_ENV

REFORMATTED = (
    "# a copy, reformatted\n\n"
    + COIN_ENV.replace("    def step", "\n\n    def step  ").replace(
        "self.turn += 1", "self.turn  +=  1   # count the turn"
    )
    + "\n\n\n"
)
NEAR_COPY = COIN_ENV.replace("0.7", "0.8")


def test_comments_and_layout_do_not_make_code_new() -> None:
    assert REFORMATTED != COIN_ENV
    assert code_key(REFORMATTED) == code_key(COIN_ENV)


def test_a_changed_constant_string_or_block_makes_code_new() -> None:
    assert code_key(NEAR_COPY) != code_key(COIN_ENV)
    assert code_key(COIN_ENV.replace("Right!", "Correct!")) != code_key(COIN_ENV)
    assert code_key("if a:\n    b()\nc()\n") != code_key("if a:\n    b()\n    c()\n")


def test_untokenizable_code_falls_back_to_its_words() -> None:
    broken = 'x = """never closed\n'
    assert code_key(broken) == code_key('x  =  """never   closed')
    assert code_key(broken) != code_key('x = """never opened\n')


def _design(code: str, *, parent: str | None = None, examples: tuple[str, ...] = (), admitted: bool = True) -> Design:
    def rec(c: str) -> EnvRecord:
        return EnvRecord(code=c, domain="games", skill="Optimization", origin="fresh", created_step=0)

    job = DesignJob(
        "Optimization",
        Document("d", "t", "x"),
        "mutation" if parent else "fresh",
        parent=rec(parent) if parent else None,
        examples=[Example(rec(e), "model") for e in examples],
    )
    return Design(
        job=job,
        prompt_ids=[1],
        completion=Completion([1], [2], [-0.1], code, "stop", 0),
        code=code,
        hint="h",
        admitted=admitted,
    )


def test_copies_of_the_prompt_or_of_memory_are_rejected_new_code_is_not() -> None:
    of_parent = _design(REFORMATTED, parent=COIN_ENV)
    of_example = _design(COIN_ENV, examples=("x = 1\n", COIN_ENV))
    of_memory = _design(COIN_ENV)
    near = _design(NEAR_COPY, parent=COIN_ENV)
    rejected_copy = _design(COIN_ENV, admitted=False)
    known = KnownCodes()
    known.refresh([("id-coin", COIN_ENV)])
    reject_copies([of_parent, of_example, near], set())
    reject_copies([of_memory, rejected_copy], known.keys())
    for d, where in ((of_parent, "shown in its prompt"), (of_example, "shown in its prompt"), (of_memory, "in memory")):
        assert not d.admitted and d.copied and where in d.reasons[-1]
    assert near.admitted and not near.copied and not near.reasons
    assert rejected_copy.copied and not rejected_copy.admitted  # its row would overwrite the original's
    assert copy_reason(NEAR_COPY, shown=[COIN_ENV], known=known.keys()) is None


def test_known_codes_follow_the_store_rows() -> None:
    known = KnownCodes()
    known.refresh([("a", COIN_ENV), ("b", NEAR_COPY)])
    assert known.keys() == {code_key(COIN_ENV), code_key(NEAR_COPY)}
    known.refresh([("b", NEAR_COPY)])  # a resume truncated the store: "a" is no longer memory
    assert known.keys() == {code_key(NEAR_COPY)}


def test_reformatted_copies_within_a_generation_are_duplicates() -> None:
    designs = [_design(COIN_ENV), _design(REFORMATTED)]
    assert duplicate_keepers(designs) == {code_key(COIN_ENV): 0}
