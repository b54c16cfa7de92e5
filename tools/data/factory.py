"""Choose the market-data provider the settings ask for."""

from __future__ import annotations

from tools.data.cache import CachingProvider
from tools.data.fundamentals import FundamentalsSource, fundamentals_source
from tools.data.local import LocalProvider, SampleProvider
from tools.data.news import NewsSource, news_source, posts_source
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.data.tushare import TushareProvider
from tools.i18n import _
from tools.settings import Settings


def provider_from_settings(settings: Settings) -> MarketDataProvider:
    """auto: tushare when TUSHARE_TOKEN is set, else QUANTDESK_LOCAL_DATA, else the bundled sample. With a token,
    tushare's `trade_cal` is the trading calendar whatever the bars' provider (tools/data/calendar.py)."""
    choice = settings.data_provider
    token = settings.tushare_token.get_secret_value() if settings.tushare_token else ""
    if choice == "auto":
        choice = "tushare" if token else ("local" if settings.local_data_path else "sample")
    if choice == "tushare":
        inner: MarketDataProvider = TushareProvider(token, settings.tushare_api_url)
    elif choice == "local":
        if settings.local_data_path is None:
            raise DataError(_("QUANTDESK_DATA_PROVIDER=local needs QUANTDESK_LOCAL_DATA (a directory)"))
        inner = LocalProvider(settings.local_data_path, price_basis=settings.local_price_basis)
    else:
        inner = SampleProvider()
    published = token and not isinstance(inner, TushareProvider)  # a tushare provider's calendar is its own
    calendar = TushareProvider(token, settings.tushare_api_url).trading_calendar if published else None
    return CachingProvider(inner, recent_days=settings.cache_recent_days, recent_ttl=settings.cache_recent_ttl,
                           calendar=calendar)


def desk_sources(settings: Settings, provider: MarketDataProvider) -> tuple[FundamentalsSource, NewsSource, NewsSource]:
    """The decision desk's fundamentals, news and social-posts sources: local folders first, then tushare (news only
    when QUANTDESK_TUSHARE_NEWS is on), then the market-data provider's daily_basic fields."""
    token = settings.tushare_token.get_secret_value() if settings.tushare_token else ""
    tushare = TushareProvider(token, settings.tushare_api_url) if token else None

    def name_of(code: str) -> str | None:
        return provider.securities(code)[code].name

    news_srcs = tuple(s.strip() for s in settings.tushare_news_src.split(",") if s.strip())
    return (fundamentals_source(directory=settings.fundamentals_dir, tushare=tushare, market=provider),
            news_source(directory=settings.news_dir, tushare=tushare if settings.tushare_news else None,
                        name_of=name_of, news_srcs=news_srcs or ("sina",)),
            posts_source(directory=settings.news_dir))
