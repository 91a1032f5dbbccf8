"""The requests the runtime answers itself, by API key: one table beside the core's own.

ApiVersions (with the node's feature levels), Produce (:mod:`.client_path`), a client's ReadOffset
(:mod:`.reads`), DescribeConfigs and DescribeCluster need the node's storage, configuration or awaits
of their own; every other request goes to the core, which routes it by its table
(``kraftwire.node.core.dispatch``). A ReadOffset from another replica's raft client goes there too.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from kraftwire.generated import api_keys

from . import client_path, describe_configs, local_apis, reads
from .node_view import LocalNode
from .server import InboundRequest

Route = Callable[[InboundRequest], Awaitable[tuple[int, Any] | None]]


def local_routes(node: LocalNode, to_core: Route) -> dict[int, Route]:
    """API key -> the handler of the requests the runtime answers itself (``to_core`` for the rest)."""

    async def api_versions(request: InboundRequest) -> tuple[int, Any]:
        status = node.status()
        epoch = -1 if status.high_watermark is None else status.high_watermark - 1
        return request.api_version, local_apis.api_versions_response(
            request.api_version, request.body, node.served, status.kraft_version, epoch
        )

    async def produce(request: InboundRequest) -> tuple[int, Any] | None:
        answer = await client_path.handle_produce(node, request.api_version, request.body)
        return None if answer is None else (request.api_version, answer)

    async def read_offset(request: InboundRequest) -> tuple[int, Any] | None:
        if not reads.is_client_read(request.api_key, request.client_id):
            return await to_core(request)
        return request.api_version, await reads.handle_client_read(node, request.body)

    async def describe_config(request: InboundRequest) -> tuple[int, Any]:
        return request.api_version, describe_configs.describe_configs_response(
            request.api_version, request.body, node.config
        )

    async def describe_cluster(request: InboundRequest) -> tuple[int, Any]:
        cluster_id, listener = node.cluster_id(), node.config.listener_name
        return request.api_version, local_apis.describe_cluster_response(
            request.api_version, request.body, cluster_id, node.status(), listener
        )

    return {
        api_keys.API_VERSIONS: api_versions,
        api_keys.PRODUCE: produce,
        api_keys.READ_OFFSET: read_offset,
        describe_configs.DESCRIBE_CONFIGS: describe_config,
        api_keys.DESCRIBE_CLUSTER: describe_cluster,
    }
