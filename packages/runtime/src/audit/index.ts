export {
  addAttestationNonce,
  copyScimAuditLog,
  createProvisioningAuditTable,
  dropAttestationNonce,
  readableLegacyTable,
  refuseReplayedAttestation,
} from './provisioning-audit';
