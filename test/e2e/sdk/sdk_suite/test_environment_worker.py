"""The official Python SDK's EnvironmentWorker (anthropic.lib.environments, used unchanged with its
default toolset) serves a session of a self_hosted environment against this server (the
ama_worker lane, workers/src/tools/selfHosted.ts): it polls the Work API with an environment service
key, runs the bash call the scripted model makes (AGENTFLEET_WORKER_MODEL) in its own workdir
and answers it with user.tool_result; the control plane then continues to the final
agent.message. The file the bash command writes lands in the worker's workdir."""
import asyncio
import json
import os
import pathlib
import tempfile
import urllib.request

import anthropic


def _environment_key(environment_id: str) -> str:
    req = urllib.request.Request(
        f"{os.environ['AGENTFLEET_BASE_URL']}/v1/svc/api_keys",
        method="POST",
        headers={
            "x-api-key": os.environ["AGENTFLEET_API_KEY"],
            "anthropic-beta": "managed-agents-2026-04-01",
            "content-type": "application/json",
        },
        data=json.dumps({"name": "py-worker", "environment_id": environment_id}).encode(),
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
        return json.loads(r.read())["key"]


async def _serve(client, environment_id: str, key: str, session_id: str, workdir: str):
    worker_client = anthropic.AsyncAnthropic(
        base_url=os.environ["AGENTFLEET_BASE_URL"], api_key="unused-the-worker-sends-bearers"
    )
    worker = worker_client.beta.environments.work.worker(
        environment_id=environment_id, environment_key=key, workdir=workdir, max_idle=0.3
    )
    task = asyncio.create_task(worker.run())
    try:
        seen = []

        def turn():
            with client.beta.sessions.events.stream(session_id) as stream:
                client.beta.sessions.events.send(
                    session_id,
                    events=[{"type": "user.message", "content": [{"type": "text", "text": "go"}]}],
                )
                for ev in stream:
                    seen.append(ev)
                    if ev.type == "session.status_idle" and ev.stop_reason.type == "end_turn":
                        return

        await asyncio.wait_for(asyncio.to_thread(turn), timeout=60)
        return seen
    finally:
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        await worker_client.close()


def test_python_environment_worker_serves_a_bash_call(client):
    env = client.beta.environments.create(name="py-worker", config={"type": "self_hosted"})
    key = _environment_key(env.id)
    agent = client.beta.agents.create(
        name="py-worker",
        model=os.environ["AGENTFLEET_WORKER_MODEL"],
        tools=[{"type": "agent_toolset_20260401"}],
    )
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    with tempfile.TemporaryDirectory(prefix="agentfleet-py-worker-") as workdir:
        seen = asyncio.run(_serve(client, env.id, key, s.id, workdir))
        order = [
            e.type
            for e in seen
            if e.type in ("agent.tool_use", "user.tool_result", "agent.message")
        ]
        assert order == ["agent.tool_use", "user.tool_result", "agent.message"]
        use = next(e for e in seen if e.type == "agent.tool_use")
        result = next(e for e in seen if e.type == "user.tool_result")
        assert use.name == "bash" and use.evaluated_permission == "allow"
        assert result.tool_use_id == use.id and not result.is_error
        assert "hello-from-python" in result.content[0].text
        assert not [e for e in seen if e.type == "agent.tool_result"]
        assert next(e for e in seen if e.type == "agent.message").content[0].text == "python worker done"
        made = pathlib.Path(workdir, "made-by-python-bash.txt")
        assert made.read_text() == "hello-from-python\n"
