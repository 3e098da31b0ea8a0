/**
 * The sidebar's "New" form as data (pure, no React): its fields, the request bodies of its two
 * kinds — a Ray cluster (`POST clusters`) and a RayJob, a program that brings its own cluster
 * (`POST rayjobs`) — and the server's per-field errors mapped back onto its fields. Both kinds
 * share the cluster's fields and names; a RayJob sends them under `cluster` and the server
 * names their errors `cluster.<field>`.
 *
 * The server owns the defaults and limits of a cluster's sizes (`GET context`'s
 * `cluster_policy`, from its configuration): a size field starts empty, shows the default it
 * will get as its placeholder and its limit beside it, and only what a user typed is sent, so
 * an administrator's `default_worker_cpu` applies to what the form creates.
 */
import type { ClusterPolicy, ClusterSpec, KubeRayJobRequest, Queue } from './api';
import { dwTrans } from './i18n';

export type FormKind = 'cluster' | 'rayjob';

/** The cluster's fields: what both kinds ask for. */
export type ClusterField =
  | 'name'
  | 'queue'
  | 'workers'
  | 'worker_cpu'
  | 'worker_memory'
  | 'worker_gpu'
  | 'head_cpu'
  | 'head_memory'
  | 'image'
  | 'priority';

/** A RayJob's own fields (its request's names). */
export type RayJobField =
  'entrypoint' | 'runtime_env' | 'submission_mode' | 'ttl_seconds_after_finished';

export type FieldName = ClusterField | RayJobField;
export type FormFields = Record<FieldName, string>;

export const SUBMISSION_MODES = ['K8sJobMode', 'SidecarMode'] as const;

/** A sized field of the cluster: the server publishes its default and limit. */
export type SizeField = keyof ClusterPolicy['sizes'];

/** The cluster's sized fields, in the order the form shows them. */
export const SIZE_FIELDS: readonly SizeField[] = [
  'workers',
  'worker_cpu',
  'worker_memory',
  'worker_gpu',
  'head_cpu',
  'head_memory'
];

/**
 * Every field empty but the RayJob's submission mode (a choice, not a size): an empty field
 * is left out of the request, and the server's default applies.
 */
export const INITIAL_FIELDS: FormFields = {
  name: '',
  queue: '',
  workers: '',
  worker_cpu: '',
  worker_memory: '',
  worker_gpu: '',
  head_cpu: '',
  head_memory: '',
  image: '',
  priority: '',
  entrypoint: '',
  runtime_env: '',
  submission_mode: 'K8sJobMode',
  ttl_seconds_after_finished: ''
};

const CLUSTER_FIELDS: readonly ClusterField[] = [
  'name',
  'queue',
  'workers',
  'worker_cpu',
  'worker_memory',
  'worker_gpu',
  'head_cpu',
  'head_memory',
  'image',
  'priority'
];

/** Fields a RayJob request carries itself; the other cluster fields go under `cluster`. */
const RAYJOB_OWN_FIELDS: readonly FieldName[] = [
  'name',
  'queue',
  'priority',
  'entrypoint',
  'runtime_env',
  'submission_mode',
  'ttl_seconds_after_finished'
];

const INTEGER_FIELDS: readonly FieldName[] = [
  'workers',
  'worker_gpu',
  'ttl_seconds_after_finished'
];

/** The fields a form of `kind` shows. */
export function fieldsOf(kind: FormKind): readonly FieldName[] {
  return kind === 'cluster' ? CLUSTER_FIELDS : [...CLUSTER_FIELDS, ...RAYJOB_OWN_FIELDS.slice(3)];
}

function isSize(name: FieldName): name is SizeField {
  return (SIZE_FIELDS as readonly FieldName[]).includes(name);
}

/**
 * What field `name` gets when left empty, as its placeholder says it: the server's default
 * ("default: 750m"); "server default" while the policy is not known (the server still
 * applies its own).
 */
export function defaultHint(policy: ClusterPolicy | null, name: FieldName): string | undefined {
  const trans = dwTrans();
  if (name === 'image') {
    return policy ? trans.__('default: %1', policy.default_image) : trans.__('server default');
  }
  if (!isSize(name)) {
    return undefined;
  }
  return policy ? trans.__('default: %1', policy.sizes[name].default) : trans.__('server default');
}

/** The most field `name` may ask for on this server ("max 4"), or null when only the quota limits it. */
export function limitHint(policy: ClusterPolicy | null, name: FieldName): string | null {
  const limit = policy && isSize(name) ? policy.sizes[name].max : null;
  return limit === null ? null : dwTrans().__('max %1', limit);
}

/** The queue to preselect: the setting's if it exists, else the namespace's default. */
export function preselectedQueue(queues: Queue[], preferred: string): string {
  if (preferred && queues.some(q => q.name === preferred)) {
    return preferred;
  }
  return (queues.find(q => q.default) ?? queues[0])?.name ?? '';
}

/**
 * A field's value in a request: empty left out (the server's default), whole numbers as
 * numbers where a number is asked for; anything else as typed, for the server to judge.
 */
function value(name: FieldName, raw: string): unknown {
  const text = raw.trim();
  if (!text) {
    return undefined;
  }
  if (INTEGER_FIELDS.includes(name) && /^-?\d+$/.test(text)) {
    return Number(text);
  }
  if (name === 'runtime_env') {
    return runtimeEnvValue(text);
  }
  return text;
}

/**
 * `runtime_env` as typed: a JSON object (Ray's runtime_env: `{"pip": ["numpy"]}`), or else
 * the text itself, which the server refuses with its message next to the field (the server
 * is the one place that validates it).
 */
export function runtimeEnvValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function collect(fields: FormFields, names: readonly FieldName[]): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  for (const name of names) {
    const v = value(name, fields[name]);
    if (v !== undefined) {
      request[name] = v;
    }
  }
  return request;
}

/** The `POST clusters` body: empty fields left out (server defaults), integers as numbers. */
export function clusterRequest(fields: FormFields): ClusterSpec {
  return collect(fields, CLUSTER_FIELDS) as ClusterSpec;
}

/** The `POST rayjobs` body: the job's own fields, and the cluster's under `cluster`. */
export function rayJobRequest(fields: FormFields): KubeRayJobRequest {
  const request = collect(fields, RAYJOB_OWN_FIELDS);
  const cluster = CLUSTER_FIELDS.filter(name => !RAYJOB_OWN_FIELDS.includes(name));
  request.cluster = collect(fields, cluster);
  return request as KubeRayJobRequest;
}

export function requestOf(kind: FormKind, fields: FormFields): ClusterSpec | KubeRayJobRequest {
  return kind === 'cluster' ? clusterRequest(fields) : rayJobRequest(fields);
}

/** Where errors that belong to no field of the form are shown. */
export const REQUEST_ERROR = 'request';

/**
 * The server's per-field errors (`{field: message}` of a 400) by the form's field names: a
 * RayJob's `cluster.<field>` is shown at `<field>`; errors of fields the form does not show
 * are gathered under `request` ("field: message").
 */
export function formErrors(kind: FormKind, errors: Record<string, string>): Record<string, string> {
  const shown = fieldsOf(kind);
  const mapped: Record<string, string> = {};
  const rest: string[] = [];
  for (const [key, message] of Object.entries(errors)) {
    const field = kind === 'rayjob' && key.startsWith('cluster.') ? key.slice(8) : key;
    if ((shown as readonly string[]).includes(field)) {
      mapped[field] = message;
    } else if (key === REQUEST_ERROR) {
      rest.unshift(message);
    } else {
      rest.push(`${key}: ${message}`);
    }
  }
  if (rest.length) {
    mapped[REQUEST_ERROR] = rest.join('; ');
  }
  return mapped;
}
