/**
 * The sidebar's translations (`@jupyterlab/translation`, domain `jupyter_dw`): the plugin
 * hands JupyterLab's translator over once; views read the bundle when they render, so they
 * need no translator prop. Without a translator (tests, a host without one) strings stay
 * English.
 */
import { ITranslator, TranslationBundle, nullTranslator } from '@jupyterlab/translation';

/** The gettext domain of jupyter_dw's strings. */
export const TRANSLATION_DOMAIN = 'jupyter_dw';

/** Translated strings kept before the memo starts again (names and numbers vary). */
const MEMO_LIMIT = 10_000;

/**
 * `inner` with each answer kept for the same arguments: gettext formats every call anew
 * (plural rules, placeholders), and a panel of 200 queues and 90 cards asks the same strings
 * hundreds of times per change. Arguments other than plain values are passed through.
 */
export function memoized(inner: TranslationBundle): TranslationBundle {
  const memo = new Map<string, string>();
  const call = (method: string, parts: unknown[], make: () => string): string => {
    // The key is built by hand: it runs for every string of every render.
    let key = method;
    for (const part of parts) {
      switch (typeof part) {
        case 'string':
          key += '\u0000s' + part;
          break;
        case 'number':
          key += '\u0000n' + part;
          break;
        case 'boolean':
          key += '\u0000b' + part;
          break;
        case 'undefined':
          key += '\u0000u';
          break;
        default:
          if (part !== null) {
            return make(); // an object: passed through
          }
          key += '\u0000l';
      }
    }
    let text = memo.get(key);
    if (text === undefined) {
      if (memo.size >= MEMO_LIMIT) {
        memo.clear();
      }
      text = make();
      memo.set(key, text);
    }
    return text;
  };
  return {
    __: (msgid, ...args) => call('__', [msgid, ...args], () => inner.__(msgid, ...args)),
    _n: (msgid, plural, n, ...args) =>
      call('_n', [msgid, plural, n, ...args], () => inner._n(msgid, plural, n, ...args)),
    _p: (ctx, msgid, ...args) =>
      call('_p', [ctx, msgid, ...args], () => inner._p(ctx, msgid, ...args)),
    _np: (ctx, msgid, plural, n, ...args) =>
      call('_np', [ctx, msgid, plural, n, ...args], () =>
        inner._np(ctx, msgid, plural, n, ...args)
      ),
    gettext: (msgid, ...args) =>
      call('gettext', [msgid, ...args], () => inner.gettext(msgid, ...args)),
    ngettext: (msgid, plural, n, ...args) =>
      call('ngettext', [msgid, plural, n, ...args], () =>
        inner.ngettext(msgid, plural, n, ...args)
      ),
    pgettext: (ctx, msgid, ...args) =>
      call('pgettext', [ctx, msgid, ...args], () => inner.pgettext(ctx, msgid, ...args)),
    npgettext: (ctx, msgid, plural, n, ...args) =>
      call('npgettext', [ctx, msgid, plural, n, ...args], () =>
        inner.npgettext(ctx, msgid, plural, n, ...args)
      ),
    dcnpgettext: (domain, ctx, msgid, plural, n, ...args) =>
      call('dcnpgettext', [domain, ctx, msgid, plural, n, ...args], () =>
        inner.dcnpgettext(domain, ctx, msgid, plural, n, ...args)
      )
  };
}

let bundle: TranslationBundle = memoized(nullTranslator.load(TRANSLATION_DOMAIN));

/** Use `translator` for every string from now on (the plugin calls it once, at activation). */
export function setTranslator(translator: ITranslator | null): void {
  bundle = memoized((translator ?? nullTranslator).load(TRANSLATION_DOMAIN));
}

/** The bundle to call `trans.__('…')` on; read it at render time, not at module load. */
export function dwTrans(): TranslationBundle {
  return bundle;
}
