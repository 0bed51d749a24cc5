"""The one LLM client every stage goes through: endpoints, cache, retries, rate limits and cost."""

from arena.llm.cache import ResponseCache
from arena.llm.client import ChatRequest, ChatResult, LLMClient
from arena.llm.cost import UsageLedger
from arena.llm.endpoints import Endpoint, load_endpoints

__all__ = [
    "ChatRequest",
    "ChatResult",
    "Endpoint",
    "LLMClient",
    "ResponseCache",
    "UsageLedger",
    "load_endpoints",
]
