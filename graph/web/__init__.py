"""The web studio (``fabula serve``): pages, a JSON API and live events over the service."""

from fabula.graph.web.app import WebConfig, create_app

__all__ = ["WebConfig", "create_app"]
