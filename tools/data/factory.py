"""Choose the market-data provider the settings ask for."""

from __future__ import annotations

from tools.data.cache import CachingProvider
from tools.data.local import LocalProvider, SampleProvider
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.data.tushare import TushareProvider
from tools.settings import Settings


def provider_from_settings(settings: Settings) -> MarketDataProvider:
    """auto: tushare when TUSHARE_TOKEN is set, else QUANTDESK_LOCAL_DATA, else the bundled sample."""
    choice = settings.data_provider
    token = settings.tushare_token.get_secret_value() if settings.tushare_token else ""
    if choice == "auto":
        choice = "tushare" if token else ("local" if settings.local_data_path else "sample")
    if choice == "tushare":
        inner: MarketDataProvider = TushareProvider(token, settings.tushare_api_url)
    elif choice == "local":
        if settings.local_data_path is None:
            raise DataError("QUANTDESK_DATA_PROVIDER=local needs QUANTDESK_LOCAL_DATA (a directory)")
        inner = LocalProvider(settings.local_data_path, price_basis=settings.local_price_basis)
    else:
        inner = SampleProvider()
    return CachingProvider(inner, recent_days=settings.cache_recent_days, recent_ttl=settings.cache_recent_ttl)
