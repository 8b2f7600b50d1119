// `node packages/dev-idp/dist/rotate-keys.js`: puts a new signing key in front; restart the provider to sign with it.
import * as path from 'node:path';
import { rotateKeys } from './keys.js';

const dataDir = path.resolve(process.env.DEV_IDP_DATA_DIR ?? '.data/dev-idp');
const result = await rotateKeys(dataDir);
process.stdout.write(`${JSON.stringify({ msg: 'signing keys rotated', ...result })}\n`);
