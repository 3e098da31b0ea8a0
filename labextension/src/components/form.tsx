import * as React from 'react';

import { DWRequestError, KubeRayJobCreateRequest } from '../api';
import {
  FieldName,
  FormFields,
  FormKind,
  INITIAL_FIELDS,
  REQUEST_ERROR,
  SIZE_FIELDS,
  SizeField,
  SUBMISSION_MODES,
  clusterRequest,
  defaultHint,
  formErrors,
  limitHint,
  preselectedQueue,
  rayJobRequest
} from '../formspec';
import { dwTrans } from '../i18n';
import { DWModel, FitChecker, FitState } from '../model';
import { colorOf } from '../shared/tones.js';

export { preselectedQueue };

/** The labels of the cluster's sized fields (translated when the form renders). */
function sizeLabels(): Record<SizeField, { label: string; inputMode?: 'numeric' }> {
  const trans = dwTrans();
  return {
    workers: { label: trans.__('Workers'), inputMode: 'numeric' },
    worker_cpu: { label: trans.__('Worker CPU') },
    worker_memory: { label: trans.__('Worker memory') },
    worker_gpu: { label: trans.__('Worker GPUs'), inputMode: 'numeric' },
    head_cpu: { label: trans.__('Head CPU') },
    head_memory: { label: trans.__('Head memory') }
  };
}

/**
 * The cluster's sizing fields and image: the same in both kinds (a RayJob sends them as
 * `cluster`). Each starts empty; its placeholder says the server's default and the text beside
 * it the server's limit (`formspec.ts`).
 */
function clusterInputs(): { name: FieldName; label: string; inputMode?: 'numeric' }[] {
  const labels = sizeLabels();
  return [
    ...SIZE_FIELDS.map(name => ({ name, ...labels[name] })),
    { name: 'image', label: dwTrans().__('Image') }
  ];
}

function kindText(kind: FormKind): { title: string; submit: string; submitting: string } {
  const trans = dwTrans();
  return kind === 'cluster'
    ? {
        title: trans.__('New cluster'),
        submit: trans.__('Create cluster'),
        submitting: trans.__('Creating…')
      }
    : {
        title: trans.__('New RayJob'),
        submit: trans.__('Submit RayJob'),
        submitting: trans.__('Submitting…')
      };
}

/** The server's verdict in words; an unknown verdict as the server names it. */
function verdictText(verdict: string): string {
  const trans = dwTrans();
  switch (verdict) {
    case 'fits-now':
      return trans.__('Fits now');
    case 'must-wait':
      return trans.__('Must wait');
    case 'never-fits':
      return trans.__('Never fits');
    case 'unknown':
      return trans.__('Unknown');
    default:
      return verdict;
  }
}

function FitVerdict(props: { state: FitState; onUseSuggestion: (workers: number) => void }) {
  const { state } = props;
  const trans = dwTrans();
  if (state.kind === 'idle') {
    return null;
  }
  if (state.kind === 'checking') {
    return <span className="jp-dw-muted">{trans.__('checking the fit…')}</span>;
  }
  if (state.kind === 'invalid') {
    return (
      <span className="jp-dw-fit-invalid">
        {trans.__('Fix the marked fields to check the fit.')}
      </span>
    );
  }
  if (state.kind === 'error') {
    return (
      <span className="jp-dw-fit-invalid">{trans.__('Fit check failed: %1', state.message)}</span>
    );
  }
  const { fit } = state;
  const suggestion = fit.suggestion ?? null;
  return (
    <>
      <span
        className={`jp-dw-badge jp-dw-verdict-${fit.verdict}`}
        data-verdict={fit.verdict}
        style={{ background: colorOf('verdict', fit.verdict) }}
      >
        {verdictText(fit.verdict)}
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
            {trans._n(
              '%1 worker would start now — use that',
              '%1 workers would start now — use that',
              suggestion.workers
            )}
          </button>
        </div>
      ) : null}
    </>
  );
}

/**
 * One labelled field with the server's error next to it, and its limit ("max 4") when it has
 * one, both read out as its description (`aria-describedby`).
 */
function Field(props: {
  name: string;
  label: string;
  error: string | undefined;
  hint?: string | null;
  children: (control: {
    id: string;
    'aria-invalid': true | undefined;
    'aria-describedby': string | undefined;
  }) => JSX.Element;
}): JSX.Element {
  const id = `jp-dw-field-${props.name}`;
  const errorId = `jp-dw-error-${props.name}`;
  const hintId = `jp-dw-hint-${props.name}`;
  const describedBy = [props.hint ? hintId : '', props.error ? errorId : '']
    .filter(Boolean)
    .join(' ');
  return (
    <div className="jp-dw-field" data-field={props.name}>
      <label htmlFor={id}>{props.label}</label>
      {props.children({
        id,
        'aria-invalid': props.error ? true : undefined,
        'aria-describedby': describedBy || undefined
      })}
      {props.hint ? (
        <span className="jp-dw-field-hint" id={hintId}>
          {props.hint}
        </span>
      ) : null}
      {props.error ? (
        <span className="jp-dw-field-error" id={errorId}>
          {props.error}
        </span>
      ) : null}
    </div>
  );
}

/** A command's request to show the form for `kind`, focused; `done` once the form took it. */
export interface IFormRequest {
  kind: FormKind;
  done: boolean;
}

/**
 * The "New" form: a Ray cluster, or a RayJob (the same cluster fields plus its command), each
 * judged as it is typed (`POST clusters/fit` or `POST rayjobs/fit`) and then created.
 */
export function NewClusterForm(props: {
  model: DWModel;
  fitChecker: FitChecker;
  preferredQueue: string;
  request?: IFormRequest | null;
}): JSX.Element {
  const { model, fitChecker } = props;
  const formRequest = props.request ?? null;
  const formRef = React.useRef<HTMLFormElement>(null);
  const queues = model.queues?.queues ?? [];
  const priorityClasses = model.queues?.priority_classes ?? null;
  const [kind, setKind] = React.useState<FormKind>('cluster');
  const [fields, setFields] = React.useState<FormFields>(INITIAL_FIELDS);
  const [errors, setErrors] = React.useState<Record<string, string>>({});
  const [fitState, setFitState] = React.useState<FitState>(fitChecker.state);
  const [submitting, setSubmitting] = React.useState(false);
  const [result, setResult] = React.useState<{ ok: boolean; text: string } | null>(null);
  const rayjobs = model.rayjobsServed;
  const shownKind: FormKind = rayjobs ? kind : 'cluster';
  const trans = dwTrans();
  const text = kindText(shownKind);

  const queue = fields.queue || preselectedQueue(queues, props.preferredQueue);
  const effective = { ...fields, queue };

  React.useEffect(() => {
    const onFit = (_: FitChecker, state: FitState) => {
      setFitState(state);
      if (state.kind === 'invalid') {
        setErrors(formErrors(shownKind, state.errors));
      } else if (state.kind === 'verdict') {
        setErrors({});
      }
    };
    fitChecker.changed.connect(onFit);
    return () => {
      fitChecker.changed.disconnect(onFit);
    };
  }, [fitChecker, shownKind]);

  const request = shownKind === 'cluster' ? clusterRequest(effective) : rayJobRequest(effective);
  const specKey = JSON.stringify(request);
  React.useEffect(() => {
    if (!queue) {
      return;
    }
    const spec: unknown = JSON.parse(specKey);
    if (shownKind === 'rayjob') {
      fitChecker.request(spec as KubeRayJobCreateRequest, 'rayjob');
    } else {
      fitChecker.request(spec as ReturnType<typeof clusterRequest>);
    }
  }, [specKey, queue, shownKind, fitChecker]);

  const set = (name: FieldName, value: string) => {
    setFields(previous => ({ ...previous, [name]: value }));
    setResult(null);
  };

  const switchKind = (next: FormKind) => {
    setKind(next);
    setErrors({});
    setResult(null);
  };

  // A command asked for this form: switch to its kind, bring it into view, focus its name.
  React.useEffect(() => {
    if (formRequest === null || formRequest.done) {
      return;
    }
    formRequest.done = true;
    switchKind(formRequest.kind);
    const name = formRef.current?.querySelector<HTMLInputElement>('input[name="name"]');
    name?.scrollIntoView({ block: 'center' });
    name?.focus();
  }, [formRequest]);

  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    setSubmitting(true);
    setResult(null);
    try {
      let created: { name: string; queue?: string | null };
      if (shownKind === 'rayjob') {
        created = await model.createRayJob(rayJobRequest(effective) as KubeRayJobCreateRequest);
      } else {
        created = await model.create(clusterRequest(effective));
      }
      setErrors({});
      const where = created.queue ?? queue;
      setResult({
        ok: true,
        text:
          shownKind === 'rayjob'
            ? trans.__('Submitted RayJob %1 in queue %2.', created.name, where)
            : trans.__('Created %1 in queue %2.', created.name, where)
      });
      setFields(previous => ({ ...previous, name: '' }));
    } catch (error) {
      if (error instanceof DWRequestError) {
        setErrors(formErrors(shownKind, error.fieldErrors));
        setResult({ ok: false, text: error.body?.hint ?? error.message });
      } else {
        setResult({ ok: false, text: String((error as Error).message ?? error) });
      }
    } finally {
      setSubmitting(false);
    }
  };

  const policy = model.clusterPolicy;
  const input = (
    name: FieldName,
    label: string,
    extra: { placeholder?: string; inputMode?: 'numeric' } = {}
  ) => (
    <Field key={name} name={name} label={label} error={errors[name]} hint={limitHint(policy, name)}>
      {control => (
        <input
          {...control}
          name={name}
          className="jp-mod-styled"
          value={fields[name]}
          placeholder={extra.placeholder ?? defaultHint(policy, name)}
          inputMode={extra.inputMode}
          autoComplete="off"
          spellCheck={false}
          onChange={e => set(name, e.target.value)}
        />
      )}
    </Field>
  );

  return (
    <section className="jp-dw-section" aria-labelledby="jp-dw-form-title">
      <h3 id="jp-dw-form-title" className="jp-dw-section-title">
        {text.title}
      </h3>
      {rayjobs ? (
        <div className="jp-dw-kind" role="radiogroup" aria-label={trans.__('What to create')}>
          {(['cluster', 'rayjob'] as const).map(k => (
            <label key={k} className="jp-dw-kind-option">
              <input
                type="radio"
                name="jp-dw-kind"
                value={k}
                checked={shownKind === k}
                onChange={() => switchKind(k)}
              />{' '}
              {k === 'cluster' ? trans.__('Ray cluster') : trans.__('RayJob')}
            </label>
          ))}
        </div>
      ) : null}
      <form
        ref={formRef}
        className="jp-dw-form"
        onSubmit={submit}
        aria-labelledby="jp-dw-form-title"
        data-kind={shownKind}
        noValidate
      >
        <Field name="queue" label={trans.__('Queue')} error={errors.queue}>
          {control => (
            <select
              {...control}
              className="jp-mod-styled"
              value={queue}
              onChange={e => set('queue', e.target.value)}
            >
              {queues.map(q => (
                <option key={q.name} value={q.name}>
                  {q.name}
                  {q.default ? ` ${trans.__('(default)')}` : ''}
                </option>
              ))}
            </select>
          )}
        </Field>
        {input('name', trans.__('Name'), {
          placeholder: shownKind === 'rayjob' ? 'train-1' : 'my-ray'
        })}
        {shownKind === 'rayjob' ? (
          <>
            {input('entrypoint', trans.__('Entrypoint'), { placeholder: 'python train.py' })}
            <Field
              name="runtime_env"
              label={trans.__('Runtime env (JSON)')}
              error={errors.runtime_env}
            >
              {control => (
                <textarea
                  {...control}
                  name="runtime_env"
                  className="jp-mod-styled jp-dw-textarea"
                  rows={2}
                  value={fields.runtime_env}
                  placeholder='{"pip": ["numpy"]}'
                  spellCheck={false}
                  onChange={e => set('runtime_env', e.target.value)}
                />
              )}
            </Field>
            <Field
              name="submission_mode"
              label={trans.__('Submission mode')}
              error={errors.submission_mode}
            >
              {control => (
                <select
                  {...control}
                  className="jp-mod-styled"
                  value={fields.submission_mode}
                  onChange={e => set('submission_mode', e.target.value)}
                >
                  {SUBMISSION_MODES.map(m => (
                    <option key={m} value={m}>
                      {m}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            {input('ttl_seconds_after_finished', trans.__('TTL after finish (s)'), {
              placeholder: trans.__('kept until deleted'),
              inputMode: 'numeric'
            })}
          </>
        ) : null}
        {clusterInputs().map(f => input(f.name, f.label, f))}
        {priorityClasses && priorityClasses.length > 0 ? (
          <Field name="priority" label={trans.__('Priority')} error={errors.priority}>
            {control => (
              <select
                {...control}
                className="jp-mod-styled"
                value={fields.priority}
                onChange={e => set('priority', e.target.value)}
              >
                <option value="">{trans.__("Kueue's default")}</option>
                {priorityClasses.map(p => (
                  <option key={p.name} value={p.name}>
                    {p.name} ({p.value}){p.default ? ` ${trans.__('(default)')}` : ''}
                  </option>
                ))}
              </select>
            )}
          </Field>
        ) : null}
        {errors[REQUEST_ERROR] ? (
          <div className="jp-dw-field-error" role="alert">
            {errors[REQUEST_ERROR]}
          </div>
        ) : null}
        <div
          className="jp-dw-fit"
          role="status"
          aria-live="polite"
          aria-label={trans.__('Fit verdict')}
        >
          <FitVerdict state={fitState} onUseSuggestion={w => set('workers', String(w))} />
        </div>
        <div className="jp-dw-form-actions">
          <button
            type="submit"
            className="jp-mod-styled jp-mod-accept jp-dw-button"
            disabled={submitting || !queue}
          >
            {submitting ? text.submitting : text.submit}
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
