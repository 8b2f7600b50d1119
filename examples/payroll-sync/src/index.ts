export { clientFor, configSchema, loadConfig, tokenSource, type Config } from './config';
export { runExport, type ExportResult } from './export';
export { createReceiver, type Receiver, type ReceiverOptions } from './receiver';
export { COLUMNS, PayrollStore, toRow, writeAtomically, type Row } from './store';
