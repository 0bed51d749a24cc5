"""Static report and battle browser: ``arena report RUN_DIR... --output DIR`` and ``arena view``.

The site is plain files that work from ``file://``: ``index.html``, ``assets/`` (our JS and CSS,
plus plotly.min.js copied from the installed ``plotly`` package) and ``data/`` (JSON wrapped in
small ``.js`` files, one per model's battles, loaded on demand through ``<script>`` tags because
Chromium blocks ``fetch()`` of ``file://``). Every untrusted string reaches the page as JSON data
and is rendered with ``textContent``; nothing from a run is ever parsed as markup.
"""


__all__ = ["ReportOptions", "build_report", "detect_sources"]


def __getattr__(name: str):
    # Lazy: the builder pulls in pandas, and `arena --help` imports this package to list `report`.
    if name in __all__:
        from arena.report import builder

        return getattr(builder, name)
    raise AttributeError(f"module 'arena.report' has no attribute {name!r}")
