export {
  addAttestationNonce,
  copyScimAuditLog,
  createProvisioningAuditTable,
  dropAttestationNonce,
  readableLegacyTable,
  refuseReplayedAttestation,
} from './provisioning-audit';
export {
  provisioningEventRepresentation,
  TRAIL_OWNERS,
  trailOldestFirst,
  type ProvisioningEventRepresentation,
  type TrailEntryRow,
  type TrailOwner,
} from './trail-export';
