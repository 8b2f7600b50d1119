// The benches' command lines: node:util's parseArgs, plus --help and a clear word on an option they do not take.
import { parseArgs, type ParseArgsConfig } from 'node:util';

type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig['options']>;

type Flags<T extends ParseArgsOptionsConfig> = ReturnType<typeof parseArgs<{ options: T; strict: true }>>['values'];

/**
 * `options` parsed from the command line. `--help` prints each option with its default and exits; an option the bench
 * does not take, or a value of the wrong kind, exits with 2 after the same list.
 */
export function parseFlags<T extends ParseArgsOptionsConfig>(
  command: string,
  options: T,
  argv = process.argv.slice(2),
): Flags<T> {
  let values: Flags<T> & { help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }) as {
      values: Flags<T> & { help?: boolean };
    });
  } catch (err) {
    process.stderr.write(`${command}: ${err instanceof Error ? err.message : String(err)}\n${usage(command, options)}`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(usage(command, options));
    process.exit(0);
  }
  return values;
}

/** What --help prints: each option, the kind of value it takes and its default (docs/benchmarks.md: what it does). */
export function usage(command: string, options: ParseArgsOptionsConfig): string {
  const lines = Object.entries(options).map(([name, o]) => {
    const value = o.type === 'string' ? ' <value>' : '';
    const fallback = o.default === undefined || o.default === false ? '' : ` (default: ${JSON.stringify(o.default)})`;
    return `  --${name}${value}${fallback}`;
  });
  return `usage: ${command} [options]  (docs/benchmarks.md describes each)\n${lines.join('\n')}\n  --help\n`;
}
