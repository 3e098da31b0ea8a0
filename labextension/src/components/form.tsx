import * as React from 'react';

import { ClusterSpecRequest, DWRequestError, Queue } from '../api';
import { DWModel, FitChecker, FitState } from '../model';

type FieldName =
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

const FIELDS: { name: FieldName; label: string; placeholder?: string; inputMode?: 'numeric' }[] = [
  { name: 'name', label: 'Name', placeholder: 'my-ray' },
  { name: 'workers', label: 'Workers', inputMode: 'numeric' },
  { name: 'worker_cpu', label: 'Worker CPU' },
  { name: 'worker_memory', label: 'Worker memory' },
  { name: 'worker_gpu', label: 'Worker GPUs', inputMode: 'numeric' },
  { name: 'head_cpu', label: 'Head CPU' },
  { name: 'head_memory', label: 'Head memory' },
  { name: 'image', label: 'Image', placeholder: 'server default' }
];

const INITIAL: Record<FieldName, string> = {
  name: '',
  queue: '',
  workers: '1',
  worker_cpu: '1',
  worker_memory: '2Gi',
  worker_gpu: '0',
  head_cpu: '1',
  head_memory: '2Gi',
  image: '',
  priority: ''
};

const INTEGER_FIELDS: FieldName[] = ['workers', 'worker_gpu'];

/** The queue to preselect: the setting's if it exists, else the namespace's default. */
export function preselectedQueue(queues: Queue[], preferred: string): string {
  if (preferred && queues.some(q => q.name === preferred)) {
    return preferred;
  }
  return (queues.find(q => q.default) ?? queues[0])?.name ?? '';
}

/** The request body: empty fields left out (server defaults), integers as numbers. */
export function specFromFields(fields: Record<FieldName, string>): ClusterSpecRequest {
  const spec: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(fields)) {
    const value = raw.trim();
    if (!value) {
      continue;
    }
    spec[key] =
      INTEGER_FIELDS.includes(key as FieldName) && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return spec as ClusterSpecRequest;
}

const VERDICT_TEXT: Record<string, string> = {
  'fits-now': 'Fits now',
  'must-wait': 'Must wait',
  'never-fits': 'Never fits',
  unknown: 'Unknown'
};

function FitVerdict(props: { state: FitState; onUseSuggestion: (workers: number) => void }) {
  const { state } = props;
  if (state.kind === 'idle') {
    return null;
  }
  if (state.kind === 'checking') {
    return <span className="jp-dw-muted">checking the fit…</span>;
  }
  if (state.kind === 'invalid') {
    return <span className="jp-dw-fit-invalid">Fix the marked fields to check the fit.</span>;
  }
  if (state.kind === 'error') {
    return <span className="jp-dw-fit-invalid">Fit check failed: {state.message}</span>;
  }
  const { fit } = state;
  const suggestion = fit.suggestion ?? null;
  return (
    <>
      <span className={`jp-dw-badge jp-dw-verdict-${fit.verdict}`} data-verdict={fit.verdict}>
        {VERDICT_TEXT[fit.verdict] ?? fit.verdict}
      </span>{' '}
      <span className="jp-dw-fit-message">{fit.message}</span>
      {suggestion ? (
        <div className="jp-dw-suggestion">
          <span className="jp-dw-muted">{suggestion.message}</span>{' '}
          <button
            type="button"
            className="jp-mod-styled jp-mod-accept jp-dw-button"
            onClick={() => props.onUseSuggestion(suggestion.workers)}
          >
            {suggestion.workers} worker{suggestion.workers === 1 ? '' : 's'} would start now — use
            that
          </button>
        </div>
      ) : null}
    </>
  );
}

export function NewClusterForm(props: {
  model: DWModel;
  fitChecker: FitChecker;
  preferredQueue: string;
}): JSX.Element {
  const { model, fitChecker } = props;
  const queues = model.queues?.queues ?? [];
  const priorityClasses = model.queues?.priority_classes ?? null;
  const [fields, setFields] = React.useState<Record<FieldName, string>>(INITIAL);
  const [errors, setErrors] = React.useState<Record<string, string>>({});
  const [fitState, setFitState] = React.useState<FitState>(fitChecker.state);
  const [submitting, setSubmitting] = React.useState(false);
  const [result, setResult] = React.useState<{ ok: boolean; text: string } | null>(null);

  const queue = fields.queue || preselectedQueue(queues, props.preferredQueue);
  const effective = { ...fields, queue };

  React.useEffect(() => {
    const onFit = (_: FitChecker, state: FitState) => {
      setFitState(state);
      if (state.kind === 'invalid') {
        setErrors(state.errors);
      } else if (state.kind === 'verdict') {
        setErrors({});
      }
    };
    fitChecker.changed.connect(onFit);
    return () => {
      fitChecker.changed.disconnect(onFit);
    };
  }, [fitChecker]);

  const specKey = JSON.stringify(specFromFields(effective));
  React.useEffect(() => {
    if (queue) {
      fitChecker.request(JSON.parse(specKey) as ClusterSpecRequest);
    }
  }, [specKey, queue, fitChecker]);

  const set = (name: FieldName, value: string) => {
    setFields(previous => ({ ...previous, [name]: value }));
    setResult(null);
  };

  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    setSubmitting(true);
    setResult(null);
    try {
      const cluster = await model.create(specFromFields(effective));
      setErrors({});
      setResult({ ok: true, text: `Created ${cluster.name} in queue ${cluster.queue ?? queue}.` });
      setFields(previous => ({ ...previous, name: '' }));
    } catch (error) {
      if (error instanceof DWRequestError) {
        setErrors(error.fieldErrors);
        setResult({ ok: false, text: error.body?.hint ?? error.message });
      } else {
        setResult({ ok: false, text: String((error as Error).message ?? error) });
      }
    } finally {
      setSubmitting(false);
    }
  };

  const fieldId = (name: string) => `jp-dw-field-${name}`;
  const errorId = (name: string) => `jp-dw-error-${name}`;
  const describe = (name: string) => (errors[name] ? errorId(name) : undefined);

  return (
    <section className="jp-dw-section" aria-labelledby="jp-dw-form-title">
      <h3 id="jp-dw-form-title" className="jp-dw-section-title">
        New cluster
      </h3>
      <form className="jp-dw-form" onSubmit={submit} aria-labelledby="jp-dw-form-title" noValidate>
        <div className="jp-dw-field">
          <label htmlFor={fieldId('queue')}>Queue</label>
          <select
            id={fieldId('queue')}
            className="jp-mod-styled"
            value={queue}
            aria-invalid={errors.queue ? true : undefined}
            aria-describedby={describe('queue')}
            onChange={e => set('queue', e.target.value)}
          >
            {queues.map(q => (
              <option key={q.name} value={q.name}>
                {q.name}
                {q.default ? ' (default)' : ''}
              </option>
            ))}
          </select>
          {errors.queue ? (
            <span className="jp-dw-field-error" id={errorId('queue')}>
              {errors.queue}
            </span>
          ) : null}
        </div>
        {FIELDS.map(f => (
          <div className="jp-dw-field" key={f.name}>
            <label htmlFor={fieldId(f.name)}>{f.label}</label>
            <input
              id={fieldId(f.name)}
              name={f.name}
              className="jp-mod-styled"
              value={fields[f.name]}
              placeholder={f.placeholder}
              inputMode={f.inputMode}
              autoComplete="off"
              spellCheck={false}
              aria-invalid={errors[f.name] ? true : undefined}
              aria-describedby={describe(f.name)}
              onChange={e => set(f.name, e.target.value)}
            />
            {errors[f.name] ? (
              <span className="jp-dw-field-error" id={errorId(f.name)}>
                {errors[f.name]}
              </span>
            ) : null}
          </div>
        ))}
        {priorityClasses && priorityClasses.length > 0 ? (
          <div className="jp-dw-field">
            <label htmlFor={fieldId('priority')}>Priority</label>
            <select
              id={fieldId('priority')}
              className="jp-mod-styled"
              value={fields.priority}
              aria-invalid={errors.priority ? true : undefined}
              aria-describedby={describe('priority')}
              onChange={e => set('priority', e.target.value)}
            >
              <option value="">Kueue's default</option>
              {priorityClasses.map(p => (
                <option key={p.name} value={p.name}>
                  {p.name} ({p.value}){p.default ? ' (default)' : ''}
                </option>
              ))}
            </select>
            {errors.priority ? (
              <span className="jp-dw-field-error" id={errorId('priority')}>
                {errors.priority}
              </span>
            ) : null}
          </div>
        ) : null}
        {errors.request ? (
          <div className="jp-dw-field-error" role="alert">
            {errors.request}
          </div>
        ) : null}
        <div className="jp-dw-fit" role="status" aria-live="polite" aria-label="Fit verdict">
          <FitVerdict state={fitState} onUseSuggestion={w => set('workers', String(w))} />
        </div>
        <div className="jp-dw-form-actions">
          <button
            type="submit"
            className="jp-mod-styled jp-mod-accept jp-dw-button"
            disabled={submitting || !queue}
          >
            {submitting ? 'Creating…' : 'Create cluster'}
          </button>
        </div>
        {result ? (
          <div
            className={result.ok ? 'jp-dw-result' : 'jp-dw-result jp-dw-result-error'}
            role={result.ok ? 'status' : 'alert'}
          >
            {result.text}
          </div>
        ) : null}
      </form>
    </section>
  );
}
