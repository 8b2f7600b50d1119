export {
  addAttestationNonce,
  copyScimAuditLog,
  createProvisioningAuditTable,
  dropAttestationNonce,
  readableLegacyTable,
  refuseReplayedAttestation,
} from './provisioning-audit';
export { trailOldestFirst, type TrailEntryRow } from './trail-export';
