"""web_fetch / web_search settings of the built-in toolset through the official Python SDK:
they round-trip (url_sources in the object form) and an invalid one is a 400 naming the field.
Their effect on tool calls is proved in test/e2e/sandbox/web-tool-options.test.ts."""
import anthropic
import pytest

TOOLSET = "agent_toolset_20260401"


def _agent(client, model, configs, extra=()):
    return client.beta.agents.create(
        name="py-web",
        model=model,
        tools=[{"type": TOOLSET, "configs": configs}, *extra],
    )


def test_web_tool_settings_round_trip(client, text_model):
    lookup = {
        "type": "custom",
        "name": "lookup",
        "description": "looks up a link",
        "input_schema": {"type": "object", "properties": {}},
    }
    a = _agent(
        client,
        text_model,
        [
            {
                "name": "web_fetch",
                "allowed_domains": ["docs.example.com"],
                "max_content_tokens": 2000,
                "url_sources": {
                    "user_input": "all",
                    "client_tool_results": {
                        "type": "except",
                        "tools": [{"type": "tool_reference", "name": "lookup"}],
                    },
                },
            },
            {
                "name": "web_search",
                "blocked_domains": ["ads.example.com", "example.org/spam"],
                "user_location": {"type": "approximate", "country": "NO", "timezone": "Europe/Oslo"},
            },
        ],
        [lookup],
    )
    got = client.beta.agents.retrieve(a.id)
    configs = {c.name: c for c in got.tools[0].configs}
    fetch, search = configs["web_fetch"], configs["web_search"]
    assert fetch.allowed_domains == ["docs.example.com"]
    assert fetch.max_content_tokens == 2000
    assert fetch.url_sources.user_input.type == "all"
    assert fetch.url_sources.client_tool_results.type == "except"
    assert [t.name for t in fetch.url_sources.client_tool_results.tools] == ["lookup"]
    assert fetch.url_sources.server_tool_results is None
    assert search.blocked_domains == ["ads.example.com", "example.org/spam"]
    assert search.user_location.country == "NO"
    assert search.user_location.timezone == "Europe/Oslo"


@pytest.mark.parametrize(
    "config, field",
    [
        (
            {"name": "web_fetch", "allowed_domains": ["a.com"], "blocked_domains": ["b.com"]},
            "tools[0].configs[0].blocked_domains",
        ),
        ({"name": "web_fetch", "allowed_domains": []}, "tools[0].configs[0].allowed_domains"),
        ({"name": "web_fetch", "blocked_domains": ["https://a.com"]}, "blocked_domains[0]"),
        ({"name": "web_fetch", "max_content_tokens": 0}, "max_content_tokens"),
        ({"name": "web_search", "max_uses": 5}, "tools[0].configs[0].max_uses"),
        (
            {"name": "web_search", "user_location": {"type": "approximate", "country": "Norway"}},
            "user_location.country",
        ),
        (
            {
                "name": "web_fetch",
                "url_sources": {
                    "user_input": "none",
                    "client_tool_results": "none",
                    "server_tool_results": "none",
                },
            },
            "url_sources",
        ),
    ],
)
def test_invalid_web_tool_setting_is_a_400_naming_the_field(client, text_model, config, field):
    with pytest.raises(anthropic.BadRequestError) as err:
        _agent(client, text_model, [config])
    assert err.value.status_code == 400
    assert field in str(err.value)
