"""Fixtures for the official Python SDK suite (driven by test/e2e/sdk/python-sdk.test.ts).

The platform is started by the vitest driver; it passes AGENTFLEET_BASE_URL and
AGENTFLEET_API_KEY, and scripts the models named in AGENTFLEET_TEXT_MODEL (plain text
answers) and AGENTFLEET_TOOL_MODEL (one custom tool call `lookup`, then text).
The SDK is used unchanged: only base_url and api_key are given.
"""
import os

import anthropic
import pytest


@pytest.fixture(scope="session")
def client() -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=os.environ["AGENTFLEET_BASE_URL"],
        api_key=os.environ["AGENTFLEET_API_KEY"],
        max_retries=0,
        timeout=30,
    )


@pytest.fixture(scope="session")
def text_model() -> str:
    return os.environ["AGENTFLEET_TEXT_MODEL"]


@pytest.fixture(scope="session")
def tool_model() -> str:
    return os.environ["AGENTFLEET_TOOL_MODEL"]


@pytest.fixture()
def env(client):
    return client.beta.environments.create(name="py-env")


@pytest.fixture()
def agent(client, text_model):
    return client.beta.agents.create(name="py-agent", model=text_model)
