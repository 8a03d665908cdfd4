"""Session budget through the official Python SDK (core/src/sessions/budget.ts): create with a
budget, reach it (the turn after the request that crossed it ends with `budget_reached` without
a model request), retrieve shows the budget and the tracked `usage.list_cost`; lowering it to
the consumed cost is refused with reason `budget_not_raised`; `None` removes it."""
import os

import anthropic
import pytest


def _turn(client, sid, text):
    stream = client.beta.sessions.events.stream(sid)
    client.beta.sessions.events.send(
        sid, events=[{"type": "user.message", "content": [{"type": "text", "text": text}]}]
    )
    with stream:
        for ev in stream:
            if ev.type == "session.status_idle":
                return ev
    raise AssertionError("the stream ended before session.status_idle")


def test_budget_reached_and_served(client, env):
    # The budget model's card prices each request at $11 (1100 cents): one request crosses $5.
    agent = client.beta.agents.create(name="py-budget", model=os.environ["AGENTFLEET_BUDGET_MODEL"])
    budget = {"type": "limit", "max_list_cost": {"amount": "500", "currency": "USD"}}
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id, budget=budget)
    assert s.budget.type == "limit"
    assert s.budget.max_list_cost.amount == "500" and s.budget.max_list_cost.currency == "USD"
    assert s.usage.list_cost.amount == "0"

    assert _turn(client, s.id, "one").stop_reason.type == "end_turn"
    got = client.beta.sessions.retrieve(s.id)
    assert got.budget.max_list_cost.amount == "500"
    assert got.usage.list_cost.amount == "1100" and got.usage.list_cost.currency == "USD"

    assert _turn(client, s.id, "two").stop_reason.type == "budget_reached"
    assert client.beta.sessions.retrieve(s.id).usage.list_cost.amount == "1100"

    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.update(
            s.id, budget={"type": "limit", "max_list_cost": {"amount": "1100", "currency": "USD"}}
        )
    assert "budget_not_raised" in str(err.value)
    assert client.beta.sessions.update(s.id, budget=None).budget is None
    assert _turn(client, s.id, "three").stop_reason.type == "end_turn"


def test_budget_create_only(client, env, agent):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    assert s.budget is None
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.update(
            s.id, budget={"type": "limit", "max_list_cost": {"amount": "100", "currency": "USD"}}
        )
    assert "budget_create_only" in str(err.value)
