"""The web studio: ``serve``."""

from __future__ import annotations

import typer

from fabula.graph.cli.app import app, err, redis_url, settings


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on."),
) -> None:
    """The web studio: steer stories in a browser. Beyond localhost it needs FABULA_WEB_TOKEN."""
    import uvicorn

    from fabula.graph.web import WebConfig, create_app
    from fabula.graph.web.security import check_bind

    token = settings().web_token
    check_bind(host, token)  # before anything starts: a refusal is one line
    config = WebConfig(
        settings=settings(), host=host, port=port, token=token, redis_url=redis_url()
    )
    web = create_app(config)
    shown = f"[{host}]" if ":" in host else host
    err.print(f"Fabula studio on http://{shown}:{port}/ (Ctrl-C stops it)", highlight=False)
    uvicorn.run(web, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
