/** Prometheus's text exposition format (version 0.0.4): families with HELP, TYPE and samples. */

export type MetricType = 'counter' | 'gauge' | 'untyped';

/** One metric family: its name, type, help and samples (labels and value). */
export interface Family {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly samples: readonly (readonly [Readonly<Record<string, string>>, number])[];
}

/** The families as Prometheus scrapes them; label values escaped as the format wants. */
export function exposition(families: readonly Family[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# TYPE ${family.name} ${family.type}`, `# HELP ${family.name} ${family.help}`);
    for (const [labels, value] of family.samples) {
      const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
      lines.push(`${family.name}${pairs.length ? `{${pairs.join(',')}}` : ''} ${value}`);
    }
  }
  lines.push('');
  return lines.join('\n');
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
