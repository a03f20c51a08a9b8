"""Which price preset a chat model is billed by (see ``CompactionConfig.pricing``):
read from the model's provider, as LangChain models name it, or, for a cloud or router
serving other makers' models, from the model's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The provider names LangChain models report, by pricing preset.
_PROVIDER_PRICING = {
    "anthropic": "anthropic",
    "openai": "openai",
    "azure": "openai",
    "azure_openai": "openai",
    "google_genai": "gemini",
    "google": "gemini",
    "gemini": "gemini",
    # Providers without a prompt cache: every call is billed whole.
    "cohere": "none",
    "perplexity": "none",
    "huggingface": "none",
}
# Clouds and routers that serve several makers' models under their own name: the
# preset follows the model's maker, read from its name.
_HOSTS = frozenset(
    {
        "amazon_bedrock",
        "bedrock",
        "bedrock_converse",
        "google_vertexai",
        "vertexai",
        "google_anthropic_vertex",
        "anthropic_vertex",
        "azure_ai",
        "openrouter",
        "litellm",
        "databricks",
        "snowflake",
    }
)
_MAKERS = (
    ("claude", "anthropic"),
    ("anthropic", "anthropic"),
    ("gemini", "gemini"),
    ("gpt-3", "openai"),
    ("gpt-4", "openai"),
    ("gpt-5", "openai"),
)


def _preset(provider: Any, name: Any = None) -> str | None:
    """The preset of a provider serving the model ``name``."""
    if not provider:
        return None
    provider = str(provider).lower()
    if provider in _HOSTS:
        found = str(name or "").lower()
        return next((preset for maker, preset in _MAKERS if maker in found), None)
    return _PROVIDER_PRICING.get(provider)


def pricing_of(model: Any) -> str | None:
    """The pricing preset of a chat model's provider; ``None`` when the provider is not
    known (its cache prices are not either: the passes then batch by fixed sizes). A
    cloud or router that serves other makers' models (Bedrock, Vertex AI, Azure AI,
    OpenRouter, ...) is priced as the maker its model's name names. See
    :func:`pricing_of_responses` for models behind a proxy or router that names none.

    Examples:
        >>> pricing_of("anthropic:claude-sonnet-4-6"), pricing_of("openai:gpt-5"), pricing_of(None)
        ('anthropic', 'openai', None)
        >>> pricing_of("bedrock_converse:us.anthropic.claude-sonnet-4-6-v1:0")
        'anthropic'
        >>> pricing_of("google_vertexai:gemini-2.5-pro"), pricing_of("cohere:command-r")
        ('gemini', 'none')
    """
    provider = name = None
    if isinstance(model, str):
        provider, _, name = model.partition(":") if ":" in model else (None, "", None)
    elif model is not None:
        try:
            params = model._get_ls_params()
            provider, name = params.get("ls_provider"), params.get("ls_model_name")
        except Exception:  # a model without LangSmith parameters
            provider = None
    return _preset(provider, name)


def pricing_of_responses(
    messages: Sequence[Any], run_metadata: Mapping[str, Any] | None = None
) -> str | None:
    """The pricing preset of the provider the newest answer names
    (``response_metadata["model_provider"]``, with its ``model_name``), else the run's
    ``ls_provider`` (with its ``ls_model_name``): for a model wrapped by a proxy or
    router that does not say who serves it. ``None`` when neither names a known
    provider (an answer with usage alone names none).

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> pricing_of_responses([AIMessage("ok", response_metadata={"model_provider": "anthropic"})])
        'anthropic'
        >>> pricing_of_responses([AIMessage("ok")], {"ls_provider": "openai"})
        'openai'
    """
    for m in reversed(messages):
        if getattr(m, "type", None) != "ai":
            continue
        metadata = getattr(m, "response_metadata", None)
        if isinstance(metadata, Mapping) and metadata.get("model_provider"):
            return _preset(metadata.get("model_provider"), metadata.get("model_name"))
        break
    metadata = run_metadata or {}
    return _preset(metadata.get("ls_provider"), metadata.get("ls_model_name"))
