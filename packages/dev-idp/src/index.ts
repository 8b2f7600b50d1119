export { AccountDirectory, DEMO_ACCOUNTS, type DevAccount } from './accounts.js';
export { keyFilePath, loadOrCreateKeys, rotateKeys } from './keys.js';
export {
  API_SCOPES,
  DOCS_CLIENT_ID,
  REALM_PATH,
  startIdentityProvider,
  type IdentityProvider,
  type IdentityProviderOptions,
} from './provider.js';
