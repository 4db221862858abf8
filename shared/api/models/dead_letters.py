"""``POST /v1/dead-letters/redrive``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from shared.api.types import Model, Problem, exactly_one_schema

LetterId = Annotated[str, Field(min_length=1, max_length=64)]


class RedriveIn(Model):
    """``POST /v1/dead-letters/redrive``: ``{"ids": [...]}`` or ``{"all": true}``."""

    model_config = Model.model_config | {"json_schema_extra": exactly_one_schema("ids", "all")}

    ids: list[LetterId] | None = Field(None, min_length=1, max_length=100, description="Up to 100 letter ids.")
    all: Literal[True] | None = Field(
        None,
        description="The letters not redriven yet, a step at a time: up to 100 a call, among the letters one call "
        "reads; call again with the answer's `next_cursor` as `cursor` until it is null.",
    )
    cursor: str | None = Field(
        None, max_length=512, description='With `"all": true`: the `next_cursor` of the previous call.'
    )

    @field_validator("all", mode="before")
    @classmethod
    def _true(cls, value: object) -> object:
        if value is not None and not isinstance(value, bool):  # a Literal[True] also takes 1 and 1.0
            raise ValueError("must be true (a JSON boolean)")
        return value

    @model_validator(mode="after")
    def _one(self) -> RedriveIn:
        if (self.ids is None) == (self.all is None):
            raise Problem("ids", 'give {"ids": [...]} or {"all": true}')
        if self.cursor is not None and self.all is None:
            raise Problem("cursor", 'goes with {"all": true} only')
        return self

    def chosen(self) -> list[str] | None:
        """The ids to redrive, or ``None`` for every one not redriven yet."""
        return self.ids
