export { circuitBreakerConfig, commonConfigSchema, env, loadConfig, loadConfigOrExit } from './config';
export { freePort } from './net';
