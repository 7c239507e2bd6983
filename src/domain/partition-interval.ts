/**
 * How long one partition period of history lasts, by `HOOKRELAY_PARTITION_INTERVAL`
 * (docs/history.md, "Partition size"): what the partition upkeep creates and what the claim
 * reads whole.
 */
export const INTERVAL_MS = { day: 86_400_000, hour: 3_600_000 } as const;
