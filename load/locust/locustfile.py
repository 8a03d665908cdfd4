"""Locust load for agentfleet: the session flow and the REST reads (`npm run load`, run.ts here).

Two user classes, equal weight (so 2 users run one of each):

- SessionFlow: creates its own environment and agent once (on_start), then per task creates a
  session, opens its SSE stream (GET /v1/sessions/{id}/events/stream), sends one user.message
  (POST /v1/sessions/{id}/events) and reads the stream until session.status_idle. Besides the
  HTTP requests it reports two request types of its own (type "SSE"): `first_event`, from the
  send to the first frame after the echo of the message, and `idle`, from the send to
  session.status_idle. A stream that ends, errs or overruns LOAD_TURN_TIMEOUT_S before idle is an
  `idle` failure.
- RestReads: seeds an environment, an agent and a session with one message, then reads GET
  /v1/agents, /v1/agents/{id}, /v1/sessions and /v1/sessions/{id}/events.

Settings (environment): LOAD_API_KEY (the key sent as x-api-key), LOAD_MODEL (the agents' model,
default claude-sonnet-4-5), LOAD_TURN_TIMEOUT_S (30), LOAD_WAIT_S (pause between one user's
tasks, default 0). The target (--host) must be on loopback unless it is exactly LOAD_BASE_URL: a
remote platform is loaded only when named explicitly.

Thresholds, checked when Locust quits (on the master of a distributed run, or the only process):
the run exits 1 when no request was made, the failure ratio of all requests exceeds
LOAD_MAX_FAIL_RATIO (0.01) or the p95 of any request type exceeds its limit: LOAD_P95_MS_<NAME>
(the name upper-cased, e.g. LOAD_P95_MS_IDLE), else LOAD_P95_MS (default 1000; `first_event` 2000
and `idle` 5000 unless set), else 0. Each crossing is printed. Test: test/e2e/fleet/load-locust.test.ts (a
20 s run with 2 users, no failures, every request type of both flows present).
"""

import json
import os
import time
import uuid
from urllib.parse import urlparse

import gevent
from locust import HttpUser, constant, events, task
from locust import stats as locust_stats
from locust.exception import StopUser
from locust.runners import WorkerRunner

API_KEY = os.environ.get("LOAD_API_KEY", "")
MODEL = os.environ.get("LOAD_MODEL", "claude-sonnet-4-5")
TURN_TIMEOUT_S = float(os.environ.get("LOAD_TURN_TIMEOUT_S", "30"))
WAIT_S = float(os.environ.get("LOAD_WAIT_S", "0"))
BETA = "managed-agents-2026-04-01"
DEFAULT_P95_MS = {"first_event": 2000.0, "idle": 5000.0}


def headers(extra=None):
    h = {"x-api-key": API_KEY, "anthropic-beta": BETA, "content-type": "application/json"}
    if extra:
        h.update(extra)
    return h


def loopback(url):
    host = urlparse(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


@events.init.add_listener
def _check_target(environment, **_kw):
    host = (environment.host or "").rstrip("/")
    explicit = os.environ.get("LOAD_BASE_URL", "").rstrip("/")
    if host and not loopback(host) and host != explicit:
        raise SystemExit(
            f"refusing target {host}: not on loopback; set LOAD_BASE_URL={host} to load it"
        )


def create(client, path, body, name):
    """POST a resource; its id, or None (the failure is recorded under `name`)."""
    with client.post(
        path, data=json.dumps(body), headers=headers(), name=name, catch_response=True
    ) as res:
        if res.status_code != 200:
            res.failure(f"{res.status_code} {res.text[:200]}")
            return None
        return res.json()["id"]


def fire(environment, name, started, exc=None):
    environment.events.request.fire(
        request_type="SSE",
        name=name,
        response_time=(time.perf_counter() - started) * 1000,
        response_length=0,
        exception=exc,
        context={},
    )


def sse_frames(res):
    """Yields (event, data) per SSE frame of a streamed requests response; pings skipped."""
    event, data = None, []
    for raw in res.iter_lines(chunk_size=None, decode_unicode=True):
        if raw == "":
            if event and event != "ping":
                yield event, "\n".join(data)
            event, data = None, []
        elif raw.startswith("event:"):
            event = raw[6:].strip()
        elif raw.startswith("data:"):
            data.append(raw[5:].strip())


def turn(user, agent_id, env_id, text):
    """One turn on a new session: create, stream, send, read to idle. True when it reached idle."""
    client, environment = user.client, user.environment
    sid = create(
        client, "/v1/sessions", {"agent": agent_id, "environment_id": env_id}, "create_session"
    )
    if sid is None:
        return False
    # The stream's headers come once its live subscription is in place: nothing sent after this
    # returns is missed.
    with client.get(
        f"/v1/sessions/{sid}/events/stream",
        headers=headers({"accept": "text/event-stream"}),
        name="open_stream",
        stream=True,
        timeout=(10, TURN_TIMEOUT_S),
        catch_response=True,
    ) as stream:
        if stream.status_code != 200:
            stream.failure(f"{stream.status_code} {stream.text[:200]}")
            return False
        stream.success()
        message = {"type": "user.message", "content": [{"type": "text", "text": text}]}
        started = time.perf_counter()
        with client.post(
            f"/v1/sessions/{sid}/events",
            data=json.dumps({"events": [message]}),
            headers=headers(),
            name="send_message",
            catch_response=True,
        ) as sent:
            if sent.status_code not in (200, 202):
                sent.failure(f"{sent.status_code} {sent.text[:200]}")
                return False
        first, running = False, False
        deadline = started + TURN_TIMEOUT_S
        try:
            for event, _data in sse_frames(stream):
                if not first and event != "user.message":
                    first = True
                    fire(environment, "first_event", started)
                if event == "session.status_running":
                    running = True
                elif event == "session.status_idle" and running:
                    fire(environment, "idle", started)
                    return True
                elif event in ("session.error", "session.deleted"):
                    fire(environment, "idle", started, RuntimeError(f"stream: {event}"))
                    return False
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"no session.status_idle within {TURN_TIMEOUT_S} s")
            raise RuntimeError("stream ended before session.status_idle")
        except Exception as exc:  # noqa: BLE001 -- every way a turn fails is one idle failure
            if not first:
                fire(environment, "first_event", started, exc)
            fire(environment, "idle", started, exc)
            return False


class SessionFlow(HttpUser):
    weight = 1
    wait_time = constant(WAIT_S)

    def on_start(self):
        tag = uuid.uuid4().hex[:8]
        self.env_id = create(
            self.client, "/v1/environments", {"name": f"locust-{tag}"}, "create_environment"
        )
        self.agent_id = create(
            self.client, "/v1/agents", {"name": f"locust-{tag}", "model": MODEL}, "create_agent"
        )
        if self.env_id is None or self.agent_id is None:
            raise StopUser()

    @task
    def session_turn(self):
        turn(self, self.agent_id, self.env_id, "hello from locust")


class RestReads(HttpUser):
    weight = 1
    wait_time = constant(WAIT_S)

    def on_start(self):
        tag = uuid.uuid4().hex[:8]
        self.env_id = create(
            self.client, "/v1/environments", {"name": f"reads-{tag}"}, "create_environment"
        )
        self.agent_id = create(
            self.client, "/v1/agents", {"name": f"reads-{tag}", "model": MODEL}, "create_agent"
        )
        if self.env_id is None or self.agent_id is None:
            raise StopUser()
        # One session with a turn in its log, so the events list has a page to read.
        self.session_id = create(
            self.client,
            "/v1/sessions",
            {"agent": self.agent_id, "environment_id": self.env_id},
            "create_session",
        )
        if self.session_id is None:
            raise StopUser()
        seed = {"type": "user.message", "content": [{"type": "text", "text": "seed"}]}
        self.client.post(
            f"/v1/sessions/{self.session_id}/events",
            data=json.dumps({"events": [seed]}),
            headers=headers(),
            name="send_message",
        )

    def get(self, path, name):
        with self.client.get(path, headers=headers(), name=name, catch_response=True) as res:
            if res.status_code != 200:
                res.failure(f"{res.status_code} {res.text[:200]}")

    @task
    def list_agents(self):
        self.get("/v1/agents?limit=20", "list_agents")

    @task
    def get_agent(self):
        self.get(f"/v1/agents/{self.agent_id}", "get_agent")

    @task
    def list_sessions(self):
        self.get("/v1/sessions?limit=20", "list_sessions")

    @task
    def list_events(self):
        self.get(f"/v1/sessions/{self.session_id}/events?limit=100", "list_events")


def p95_limit(name):
    own = os.environ.get("LOAD_P95_MS_" + name.upper())
    if own:
        return float(own)
    if "LOAD_P95_MS" in os.environ:
        return float(os.environ["LOAD_P95_MS"])
    return DEFAULT_P95_MS.get(name, 1000.0)


@events.quitting.add_listener
def _thresholds(environment, **_kw):
    # A worker's stats are handed to the master and reset: the master judges the whole run.
    if isinstance(environment.runner, WorkerRunner):
        return
    stats = environment.stats
    crossed = []
    max_fail = float(os.environ.get("LOAD_MAX_FAIL_RATIO", "0.01"))
    if stats.total.num_requests == 0:
        crossed.append("no requests were made")
    elif stats.total.fail_ratio > max_fail:
        crossed.append(
            f"failure ratio {stats.total.fail_ratio:.2%} > {max_fail:.2%}"
            f" ({stats.total.num_failures} of {stats.total.num_requests})"
        )
    for (name, method), entry in sorted(stats.entries.items()):
        if entry.num_requests == 0:
            continue
        p95 = entry.get_response_time_percentile(0.95)
        limit = p95_limit(name)
        if p95 > limit:
            crossed.append(f"{method} {name}: p95 {p95:.0f} ms > {limit:.0f} ms")
    for line in crossed:
        print(f"threshold crossed: {line}", flush=True)
    environment.process_exit_code = 1 if crossed else 0
    # Locust's CSV writer rewrites the files every second; one more round after the users
    # stopped puts the final stats in them (close_files only flushes what it last wrote).
    if environment.parsed_options and environment.parsed_options.csv_prefix:
        gevent.sleep(locust_stats.CSV_STATS_INTERVAL_SEC + 0.2)
