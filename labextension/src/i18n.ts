/**
 * The sidebar's translations (`@jupyterlab/translation`, domain `jupyter_dw`): the plugin
 * hands JupyterLab's translator over once; views read the bundle when they render, so they
 * need no translator prop. Without a translator (tests, a host without one) strings stay
 * English.
 */
import { ITranslator, TranslationBundle, nullTranslator } from '@jupyterlab/translation';

/** The gettext domain of jupyter_dw's strings. */
export const TRANSLATION_DOMAIN = 'jupyter_dw';

let bundle: TranslationBundle = nullTranslator.load(TRANSLATION_DOMAIN);

/** Use `translator` for every string from now on (the plugin calls it once, at activation). */
export function setTranslator(translator: ITranslator | null): void {
  bundle = (translator ?? nullTranslator).load(TRANSLATION_DOMAIN);
}

/** The bundle to call `trans.__('…')` on; read it at render time, not at module load. */
export function dwTrans(): TranslationBundle {
  return bundle;
}
