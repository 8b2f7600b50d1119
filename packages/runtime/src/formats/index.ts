export { requireGroupId, requireUserId } from './id-arguments';
export {
  DEFAULT_ORGANIZATION_CLAIM,
  isOrganizationAlias,
  isUserId,
  isUuid,
  newScimSecretToken,
  ORGANIZATION_ALIAS_CHARACTERS,
  ORGANIZATION_ALIAS_LETTER,
  ORGANIZATION_ALIAS_PATTERN,
  ORGANIZATION_ALIAS_RULE,
  SCIM_SECRET_TOKEN,
  SCIM_SECRET_TOKEN_PREFIX,
  USER_ID_PATTERN,
} from './ids';
export { parseRfc3339 } from './timestamps';
export {
  apiTime,
  apiTimeOrNull,
  dateToTimestamp,
  isoToTimestamp,
  millisToTimestamp,
  pgUtcTextToTimestamp,
  timestampToDate,
  timestampToIso,
  timestampToMillis,
  type WireTimestamp,
} from './wire-time';
export {
  type Acknowledged,
  Acknowledgements,
  acknowledgementsChannel,
  DEFAULT_ACKNOWLEDGEMENT_TIMEOUT_MS,
  SCIM_TOKEN_REVOCATIONS_CHANNEL,
} from './channels';
