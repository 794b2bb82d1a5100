// Package plot draws moebench's figures with gonum/plot: a Figure is one or
// more panels side by side, each with labelled axes and a legend, holding
// lines and points, stacked bars, or a model-against-reference panel with
// the y = x line and an error band. Commands turn their results into a
// Figure; Render writes it as SVG or PNG.
package plot
