"""`agentao serve`: read the config, apply the command line, refuse unsafe binds, run."""

from __future__ import annotations

import argparse
import sys

from agentao.gateway.config import ConfigError, load_config, with_overrides


def run_serve(args: argparse.Namespace) -> int:
    try:
        config = with_overrides(
            load_config(args.config),
            agents=args.agent,
            host=args.host,
            port=args.port,
            allowed_hosts=args.allowed_host,
            allowed_origins=args.allowed_origin,
            store=args.store,
            advertise_url=getattr(args, "advertise_url", None),
        )
        config.check_bind()
    except ConfigError as exc:
        print(f"agentao serve: {exc}", file=sys.stderr)
        return 2
    from agentao.gateway.serving import serve

    return serve(config, log_level=args.log_level)


__all__ = ["run_serve"]
