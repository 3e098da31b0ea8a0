// Types of clock.js for the sidebar (labextension/src), which imports it.

export function clockTime(iso: string | Date): string;

export function durationText(seconds: number): string;
