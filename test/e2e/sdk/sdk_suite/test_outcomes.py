"""Outcomes through the official Python SDK (core/src/outcomes, workers/src/turn/outcome.ts):
a user.define_outcome is echoed with its outc_ id, the scripted grader sends the first attempt
back (needs_revision) and accepts the second (satisfied); every event parses as its SDK type
and the session's outcome_evaluations says satisfied after one revision."""
import os

from turns import send_until_idle


def test_outcome_revised_then_satisfied(client, env):
    agent = client.beta.agents.create(name="py-outcome", model=os.environ["AGENTFLEET_OUTCOME_MODEL"])
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    seen = send_until_idle(
        client,
        s.id,
        [
            {
                "type": "user.define_outcome",
                "description": "Name three primes.",
                "rubric": {"type": "text", "content": "Exactly three prime numbers."},
                "max_iterations": 2,
            }
        ],
    )
    echo = next(e for e in seen if e.type == "user.define_outcome")
    assert echo.outcome_id.startswith("outc_")
    assert echo.rubric.type == "text" and echo.rubric.content == "Exactly three prime numbers."
    assert echo.max_iterations == 2
    starts = [e for e in seen if e.type == "span.outcome_evaluation_start"]
    ends = [e for e in seen if e.type == "span.outcome_evaluation_end"]
    assert [(e.outcome_id, e.iteration) for e in starts] == [(echo.outcome_id, 0), (echo.outcome_id, 1)]
    assert [e.result for e in ends] == ["needs_revision", "satisfied"]
    assert ends[0].outcome_evaluation_start_id == starts[0].id
    assert ends[1].usage.input_tokens >= 0
    assert [e.type for e in seen].count("session.status_idle") == 1

    got = client.beta.sessions.retrieve(s.id)
    assert len(got.outcome_evaluations) == 1
    ev = got.outcome_evaluations[0]
    assert ev.type == "outcome_evaluation" and ev.outcome_id == echo.outcome_id
    assert ev.result == "satisfied" and ev.iteration == 1
    assert ev.explanation == "three primes" and ev.completed_at is not None
