// Types of tones.js for the sidebar (labextension/src), which imports it.

export type Tone = 'ok' | 'wait' | 'progress' | 'bad' | 'neutral';
export type ToneKind = 'state' | 'verdict' | 'job';

export const TONE_TABLE: {
  tones: Record<Tone, { css: string; fallback: string }>;
  state: Record<string, Tone>;
  verdict: Record<string, Tone>;
  job: Record<string, Tone>;
};

export function toneOf(kind: ToneKind, value: string | null | undefined): Tone;
export function toneColor(tone: Tone): string;
export function colorOf(kind: ToneKind, value: string | null | undefined): string;
