"""Which embedding providers each subscription tier may use, and its monthly embedding quota.

Mirrors the original's TIER_CAPABILITIES: every tier's quota is -1 (unlimited), so the quota
never bites in practice, but the mechanism is real; tests (and a deployment) replace a tier's
entry with a finite quota.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mind_core.embeddings.base import EmbeddingError
from mind_core.errors import MindError

TIERS = ("TRIAL", "FREE", "PRO", "TEAMS", "ENTERPRISE")
UNLIMITED = -1
UPGRADE_URL = "https://waggle-os.ai/upgrade"
EVAL_MODE_VARS = ("MIND_HARVEST_EVAL_MODE", "WAGGLE_EVAL_MODE")

_FREE = frozenset({"inprocess", "mock", "ollama"})
_ALL = frozenset({"inprocess", "ollama", "voyage", "openai", "litellm", "mock"})


@dataclass(frozen=True)
class TierCapabilities:
    embedding_providers: frozenset[str]
    embedding_quota_per_month: int = UNLIMITED


TIER_CAPABILITIES: dict[str, TierCapabilities] = {
    "TRIAL": TierCapabilities(_ALL),
    "FREE": TierCapabilities(_FREE),
    "PRO": TierCapabilities(_FREE | {"voyage", "openai"}),
    "TEAMS": TierCapabilities(_ALL),
    "ENTERPRISE": TierCapabilities(_ALL),
}


class TierError(MindError):
    """A provider was requested explicitly that the caller's tier does not include."""

    def __init__(self, required_tier: str, current_tier: str, provider: str) -> None:
        self.required_tier = required_tier
        self.current_tier = current_tier
        self.provider = provider
        super().__init__(
            f"Embedding provider '{provider}' is not available on the {current_tier} tier "
            f"(requires {required_tier})"
        )


class EmbeddingQuotaExceededError(EmbeddingError):
    """This month's embedding count would pass the tier's quota."""

    def __init__(self, tier: str, quota: int, current: int, upgrade_url: str = UPGRADE_URL) -> None:
        self.tier = tier
        self.quota = quota
        self.current = current
        self.upgrade_url = upgrade_url
        super().__init__(f"Embedding quota exceeded: {current}/{quota} for {tier} tier")


def capabilities(tier: str) -> TierCapabilities:
    try:
        return TIER_CAPABILITIES[tier]
    except KeyError:
        raise MindError(f"unknown tier {tier!r}; expected one of {', '.join(TIERS)}") from None


def provider_allowed(tier: str, provider: str) -> bool:
    return provider in capabilities(tier).embedding_providers


def get_minimum_tier_for_provider(provider: str) -> str:
    """First tier in TIERS order that includes the provider (TRIAL, since TRIAL includes all)."""
    for tier in TIERS:
        if provider in TIER_CAPABILITIES[tier].embedding_providers:
            return tier
    return TIERS[-1]


def is_eval_mode(env: Mapping[str, str] | None = None) -> bool:
    """Gating is off when an eval-mode variable is literally '1' (not 'true', not 'yes')."""
    env = os.environ if env is None else env
    return any(env.get(name) == "1" for name in EVAL_MODE_VARS)
