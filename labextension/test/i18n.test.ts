/**
 * The sidebar's words go through JupyterLab's translator (`setTranslator`, domain
 * `jupyter_dw`): a fake language wraps every template in «…» before its placeholders are
 * filled, as a real translation would replace it. Rendered with react-dom/server (JupyterLab's
 * own react-dom, no DOM needed).
 */
import * as React from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { ITranslator, TranslationBundle, nullTranslator } from '@jupyterlab/translation';
import { afterEach, describe, expect, it } from 'vitest';

import { DeleteButton, QueuePosition } from '../src/components/card';
import { WorkersView } from '../src/components/workers';
import { TRANSLATION_DOMAIN, memoized, setTranslator } from '../src/i18n';
import { Transition, noticesOf } from '../src/notices';
import { cluster } from './fixtures';

const english = nullTranslator.load(TRANSLATION_DOMAIN);
const wrap = (msgid: string) => `«${msgid}»`;

/** A language whose every string is its English in «…» (placeholders kept, then filled). */
const wrapped: TranslationBundle = {
  __: (msgid, ...args) => english.__(wrap(msgid), ...args),
  _n: (msgid, plural, n, ...args) => english._n(wrap(msgid), wrap(plural), n, ...args),
  _p: (context, msgid, ...args) => english._p(context, wrap(msgid), ...args),
  _np: (context, msgid, plural, n, ...args) =>
    english._np(context, wrap(msgid), wrap(plural), n, ...args),
  gettext: (msgid, ...args) => english.gettext(wrap(msgid), ...args),
  ngettext: (msgid, plural, n, ...args) => english.ngettext(wrap(msgid), wrap(plural), n, ...args),
  pgettext: (context, msgid, ...args) => english.pgettext(context, wrap(msgid), ...args),
  npgettext: (context, msgid, plural, n, ...args) =>
    english.npgettext(context, wrap(msgid), wrap(plural), n, ...args),
  dcnpgettext: (domain, context, msgid, plural, n, ...args) =>
    english.dcnpgettext(domain, context, wrap(msgid), wrap(plural), n, ...args)
};

const domains: string[] = [];
const fakeTranslator: ITranslator = {
  languageCode: 'xx',
  load: (domain: string) => {
    domains.push(domain);
    return wrapped;
  }
};

const render = (element: React.ReactElement) => renderToStaticMarkup(element);

const ready = cluster('c', {
  state: 'ready',
  admitted: true,
  head_ready: true,
  workers_ready: 2,
  position_in_local_queue: null
});

function readyNotices() {
  const t: Transition = {
    subject: 'cluster',
    name: 'c',
    before: { ...ready, state: 'starting', head_ready: false, workers_ready: 0 },
    after: ready,
    crossed: []
  };
  return noticesOf(t, Date.parse('2026-11-27T10:10:00Z')).map(n => n.text);
}

afterEach(() => setTranslator(null));

describe('translations', () => {
  it("render a card's words through the translator of domain jupyter_dw", () => {
    setTranslator(fakeTranslator);
    expect(domains).toEqual(['jupyter_dw']);
    // Elements stay in the translated sentence (Placed); numbers and names are not translated.
    expect(render(React.createElement(WorkersView, { cluster: ready, mine: true }))).toContain(
      '<span>«workers <strong data-workers-ready="2">2</strong>/2 ready» · «head ready»</span>'
    );
    expect(
      render(
        React.createElement(QueuePosition, {
          queued: true,
          queue: 'team',
          position: 0,
          positionInClusterQueue: 2,
          clusterQueue: 'cq'
        })
      )
    ).toBe(
      '<div class="jp-dw-position" data-position="0">«position 1 in queue team» «(3 in cq)»</div>'
    );
    const button = render(
      React.createElement(DeleteButton, { name: 'c', disabled: false, onDelete: () => undefined })
    );
    expect(button).toContain('aria-label="«Delete c»"');
    expect(button).toContain('>«Delete»</button>');
  });

  it('tells notifications in the translated words', () => {
    setTranslator(fakeTranslator);
    expect(readyNotices()).toEqual(['«Ray cluster c is ready»']);
  });

  it('is English, unchanged, without a translator', () => {
    setTranslator(fakeTranslator);
    setTranslator(null);
    expect(render(React.createElement(WorkersView, { cluster: ready, mine: true }))).toContain(
      '<span>workers <strong data-workers-ready="2">2</strong>/2 ready · head ready</span>'
    );
    expect(readyNotices()).toEqual(['Ray cluster c is ready']);
  });
});

describe('memoized translations', () => {
  it('answers as the bundle does, asking it once per string and arguments', () => {
    let calls = 0;
    const counted: TranslationBundle = {
      ...wrapped,
      __: (msgid, ...args) => {
        calls += 1;
        return wrapped.__(msgid, ...args);
      },
      _n: (msgid, plural, n, ...args) => {
        calls += 1;
        return wrapped._n(msgid, plural, n, ...args);
      }
    };
    const memo = memoized(counted);
    expect(memo.__('queue %1', 'team')).toBe(wrapped.__('queue %1', 'team'));
    expect(memo.__('queue %1', 'team')).toBe('«queue team»');
    expect(calls).toBe(1);
    expect(memo.__('queue %1', 'other')).toBe('«queue other»');
    expect(memo._n('%1 worker', '%1 workers', 1, 1)).toBe(
      wrapped._n('%1 worker', '%1 workers', 1, 1)
    );
    expect(memo._n('%1 worker', '%1 workers', 2, 2)).toBe(
      wrapped._n('%1 worker', '%1 workers', 2, 2)
    );
    expect(calls).toBe(4);
    // A number and the same digits as a string are different arguments.
    memo.__('size %1', 1);
    memo.__('size %1', '1');
    expect(calls).toBe(6);
    // Anything but plain values is passed through, every time.
    const thing = { toString: () => 'x' };
    memo.__('of %1', thing);
    memo.__('of %1', thing);
    expect(calls).toBe(8);
  });
});
