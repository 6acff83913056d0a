"""The web studio (``fabula serve``): pages, a JSON API and live events over the service."""

from fabula.graph.web.app import WebConfig as WebConfig
from fabula.graph.web.app import create_app as create_app
