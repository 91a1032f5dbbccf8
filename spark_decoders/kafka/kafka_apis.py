"""The names of Kafka's API keys, for rows whose API the codec set in use does not cover.

A capture decoded with the bundled (KRaft) codecs still carries classic traffic: without this table
a Metadata request would be a row named only "API key 3". The names are those of Apache Kafka's
request specs (trunk, 4.x); a codec set's own name for a key takes precedence (``BodyDecoder.api_name``).
"""

from __future__ import annotations

_NAMES = """
Produce Fetch ListOffsets Metadata LeaderAndIsr StopReplica UpdateMetadata ControlledShutdown
OffsetCommit OffsetFetch FindCoordinator JoinGroup Heartbeat LeaveGroup SyncGroup DescribeGroups
ListGroups SaslHandshake ApiVersions CreateTopics DeleteTopics DeleteRecords InitProducerId
OffsetForLeaderEpoch AddPartitionsToTxn AddOffsetsToTxn EndTxn WriteTxnMarkers TxnOffsetCommit
DescribeAcls CreateAcls DeleteAcls DescribeConfigs AlterConfigs AlterReplicaLogDirs DescribeLogDirs
SaslAuthenticate CreatePartitions CreateDelegationToken RenewDelegationToken ExpireDelegationToken
DescribeDelegationToken DeleteGroups ElectLeaders IncrementalAlterConfigs
AlterPartitionReassignments ListPartitionReassignments OffsetDelete DescribeClientQuotas
AlterClientQuotas DescribeUserScramCredentials AlterUserScramCredentials Vote BeginQuorumEpoch
EndQuorumEpoch DescribeQuorum AlterPartition UpdateFeatures Envelope FetchSnapshot DescribeCluster
DescribeProducers BrokerRegistration BrokerHeartbeat UnregisterBroker DescribeTransactions
ListTransactions AllocateProducerIds ConsumerGroupHeartbeat ConsumerGroupDescribe
ControllerRegistration GetTelemetrySubscriptions PushTelemetry AssignReplicasToDirs
ListConfigResources DescribeTopicPartitions ShareGroupHeartbeat ShareGroupDescribe ShareFetch
ShareAcknowledge AddRaftVoter RemoveRaftVoter UpdateRaftVoter InitializeShareGroupState
ReadShareGroupState WriteShareGroupState DeleteShareGroupState ReadShareGroupStateSummary
StreamsGroupHeartbeat StreamsGroupDescribe DescribeShareGroupOffsets AlterShareGroupOffsets
DeleteShareGroupOffsets StreamsGroupTopologyDescriptionUpdate UnregisterController
"""

# Kafka numbers its APIs 0, 1, 2, ... with no gaps, in the order above.
KAFKA_API_NAMES: dict[int, str] = dict(enumerate(_NAMES.split()))
