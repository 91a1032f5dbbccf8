"""The requests the runtime answers itself: ApiVersions (with the node's feature levels) and
DescribeCluster (the controllers, for Kafka's admin client). Everything else goes to the core."""

from __future__ import annotations

import re
from typing import Any

from kraftwire.generated import APIS, api_keys
from kraftwire.generated import api_versions_response as _av
from kraftwire.generated import describe_cluster_response as _dc
from kraftwire.generated.errors import (
    INVALID_REQUEST,
    MISMATCHED_ENDPOINT_TYPE,
    NONE,
    UNSUPPORTED_ENDPOINT_TYPE,
    UNSUPPORTED_VERSION,
)
from kraftwire.node.core.api import QuorumStatus

# What a KRaft controller serves (docs/kraft.md §11), at the versions our codecs know.
SERVED_KEYS = (
    api_keys.FETCH,
    api_keys.API_VERSIONS,
    api_keys.DESCRIBE_CONFIGS,
    api_keys.VOTE,
    api_keys.BEGIN_QUORUM_EPOCH,
    api_keys.END_QUORUM_EPOCH,
    api_keys.DESCRIBE_QUORUM,
    api_keys.FETCH_SNAPSHOT,
    api_keys.DESCRIBE_CLUSTER,
    api_keys.ADD_RAFT_VOTER,
    api_keys.REMOVE_RAFT_VOTER,
    api_keys.UPDATE_RAFT_VOTER,
)
SUPPORTED_KRAFT_VERSION = (0, 1)
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2  # DescribeCluster's EndpointType (KIP-919)
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def served_versions(extra: tuple[int, ...] = ()) -> dict[int, tuple[int, int]]:
    return {
        key: (APIS[key].lowest_version, APIS[key].highest_version) for key in (*SERVED_KEYS, *extra)
    }


def api_versions_response(
    version: int,
    request: Any,
    served: dict[int, tuple[int, int]],
    kraft_version: int,
    features_epoch: int,
) -> Any:
    keys = [
        _av.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in sorted(served.items())
    ]
    if version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name or "")
        and _SOFTWARE.fullmatch(request.client_software_version or "")
    ):
        return _av.ApiVersionsResponse(error_code=INVALID_REQUEST, api_keys=keys)
    low, high = SUPPORTED_KRAFT_VERSION
    features, finalized = [], []
    # v0-v3 answers leave out features whose minimum is 0 (KAFKA-17011); v4+ shows them.
    if version >= 3 and (low > 0 or version >= 4):
        features = [
            _av.SupportedFeatureKey(name="kraft.version", min_version=low, max_version=high)
        ]
        if kraft_version > 0:
            finalized = [
                _av.FinalizedFeatureKey(
                    name="kraft.version",
                    min_version_level=kraft_version,
                    max_version_level=kraft_version,
                )
            ]
    return _av.ApiVersionsResponse(
        error_code=NONE,
        api_keys=keys,
        supported_features=features,
        finalized_features_epoch=features_epoch if finalized else -1,
        finalized_features=finalized,
    )


def unsupported_api_versions(served: dict[int, tuple[int, int]]) -> Any:
    keys = [
        _av.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in sorted(served.items())
    ]
    return _av.ApiVersionsResponse(error_code=UNSUPPORTED_VERSION, api_keys=keys)


def describe_cluster_response(
    version: int, request: Any, cluster_id: str, status: QuorumStatus, listener: str
) -> Any:
    """As ``ControllerApis.handleDescribeCluster``: controllers only (docs/operations.md §3.2)."""
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINT)
    if version == 0 or endpoint_type not in (BROKER_ENDPOINT, CONTROLLER_ENDPOINT):
        error = INVALID_REQUEST if version == 0 else UNSUPPORTED_ENDPOINT_TYPE
        return _dc.DescribeClusterResponse(
            error_code=error, endpoint_type=CONTROLLER_ENDPOINT, cluster_id=cluster_id
        )
    if endpoint_type != CONTROLLER_ENDPOINT:
        return _dc.DescribeClusterResponse(
            error_code=MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER",
            endpoint_type=CONTROLLER_ENDPOINT,
            cluster_id=cluster_id,
        )
    brokers = []
    for voter in status.voters:
        endpoint = voter.listeners.get(listener) or next(iter(voter.listeners.values()), None)
        if endpoint is not None:
            brokers.append(
                _dc.DescribeClusterBroker(
                    broker_id=voter.key.id, host=endpoint.host, port=endpoint.port
                )
            )
    listed = {b.broker_id for b in brokers}
    return _dc.DescribeClusterResponse(
        endpoint_type=CONTROLLER_ENDPOINT,
        cluster_id=cluster_id,
        controller_id=status.leader_id if status.leader_id in listed else -1,
        brokers=brokers,
    )
