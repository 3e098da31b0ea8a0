/**
 * A translated sentence with elements in it (a number in bold, a counting duration): the
 * caller translates with the placeholders as their own arguments (`trans.__('workers %1/%2
 * ready', '%1', '%2')`), so they survive the translation's substitution and may move; each
 * `%N` then becomes the N-th part, wherever the translation put it.
 */
import * as React from 'react';

export function Placed(props: { text: string; parts: React.ReactNode[] }): JSX.Element {
  const pieces = props.text.split(/(%\d+)/);
  return (
    <>
      {pieces.map((piece, i) => {
        const match = /^%(\d+)$/.exec(piece);
        const part = match ? props.parts[Number(match[1]) - 1] : undefined;
        return <React.Fragment key={i}>{part !== undefined ? part : piece}</React.Fragment>;
      })}
    </>
  );
}
